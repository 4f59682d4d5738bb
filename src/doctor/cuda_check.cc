// The CUDA check: the toolkit nvcc on PATH belongs to, $CUDA_PATH and /usr/local/cuda must be one
// version (TVM bakes CUDA_VERSION from one and runs against another), and no newer than the driver.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal/files.h"
#include "kiln/cuda.h"
#include "kiln/doctor.h"
#include "kiln/error.h"
#include "support.h"

namespace kiln::doctor {
namespace {

namespace fs = std::filesystem;
using cuda::CudaVersion;
using detail::real_path;

struct Toolkit {
  std::string label;                   // "nvcc on PATH", "$CUDA_PATH", "/usr/local/cuda"
  fs::path root;                       // as found
  std::optional<CudaVersion> files{};  // what its version files say
  std::optional<CudaVersion> nvcc{};   // what its bin/nvcc says
  std::string note{};                  // a version file that could not be read

  std::optional<CudaVersion> version() const { return files ? files : nvcc; }
  std::string describe() const {
    fs::path real = real_path(root);
    std::string where =
        real != root ? fmt::format("{} ({})", root.string(), real.string()) : root.string();
    std::optional<CudaVersion> v = version();
    return fmt::format("{} {} is CUDA {}", label, where, v ? short_version(*v) : "unknown");
  }
  static std::string short_version(const CudaVersion& v) {
    return fmt::format("{}.{}", v.major, v.minor);
  }
};

Toolkit inspect(std::string label, const fs::path& root) {
  Toolkit t{.label = std::move(label), .root = root};
  try {
    t.files = cuda::cuda_version_from_files(root);
  } catch (const Error& e) {
    t.note = e.what();
  }
  if (fs::path nvcc = root / "bin" / "nvcc"; internal::is_file(nvcc)) {
    t.nvcc = cuda::nvcc_version(nvcc);
  }
  return t;
}

bool same_release(const CudaVersion& a, const CudaVersion& b) {
  return a.major == b.major && a.minor == b.minor;
}

// The toolkits a build could pick up, first the one compared against the rest: the one nvcc on
// PATH belongs to, then $CUDA_PATH, then /usr/local/cuda (each that exists).
std::vector<Toolkit> find_toolkits() {
  std::vector<Toolkit> toolkits;
  if (std::optional<fs::path> nvcc = detail::first_on_path("nvcc")) {
    fs::path real = real_path(*nvcc);
    toolkits.push_back(inspect(fmt::format("nvcc on PATH ({})", nvcc->string()),
                               real.parent_path().parent_path()));
  }
  if (std::optional<std::string> cuda_path = internal::env("CUDA_PATH")) {
    toolkits.push_back(inspect("$CUDA_PATH", *cuda_path));
  }
  if (internal::is_dir("/usr/local/cuda")) {
    toolkits.push_back(inspect("/usr/local/cuda", "/usr/local/cuda"));
  }
  return toolkits;
}

// What is wrong, what to do about each, and whether a version mismatch is among it (the case
// TVM reports badly).
struct Problems {
  std::vector<std::string> problems;
  std::vector<std::string> fixes;
  bool mismatch = false;
};

// Within each toolkit: an unreadable version file, or version files that disagree with its
// own bin/nvcc.
void check_each_toolkit(const std::vector<Toolkit>& toolkits, Problems& p) {
  for (const Toolkit& t : toolkits) {
    if (!t.note.empty()) p.problems.push_back(t.note);
    if (t.files && t.nvcc && !same_release(*t.files, *t.nvcc)) {
      p.problems.push_back(fmt::format(
          "{}: its version file says CUDA {} but its bin/nvcc ({}) is CUDA {}", t.root.string(),
          Toolkit::short_version(*t.files), real_path(t.root / "bin" / "nvcc").string(),
          Toolkit::short_version(*t.nvcc)));
      p.mismatch = true;
      p.fixes.push_back(
          fmt::format("repair {} (its bin/nvcc links into another toolkit)", t.root.string()));
    }
  }
}

// Between toolkits: each must be the first one's release.
void check_toolkits_agree(const std::vector<Toolkit>& toolkits, Problems& p) {
  const Toolkit& first = toolkits.front();
  for (size_t i = 1; i < toolkits.size(); ++i) {
    const Toolkit& other = toolkits[i];
    std::optional<CudaVersion> a = first.version();
    std::optional<CudaVersion> b = other.version();
    if (a && b && !same_release(*a, *b)) {
      p.mismatch = true;
      p.problems.push_back(fmt::format("{}, but {}", first.describe(), other.describe()));
      p.fixes.push_back(
          fmt::format("point {} and PATH at one toolkit (e.g. export CUDA_PATH={} "
                      "and put {}/bin first on PATH)",
                      other.label, real_path(first.root).string(), real_path(first.root).string()));
    }
  }
}

// Against the driver: the toolkit may be no newer than what the driver supports. Returns what
// was found about the driver, for the finding.
std::string check_driver(const Toolkit& first, Problems& p) {
  std::string why_no_driver;
  std::optional<CudaVersion> driver = cuda::driver_cuda_version(&why_no_driver);
  std::optional<CudaVersion> toolkit = first.version();
  if (driver && toolkit &&
      std::tie(toolkit->major, toolkit->minor) > std::tie(driver->major, driver->minor)) {
    p.problems.push_back(fmt::format(
        "the toolkit is CUDA {} but the driver supports only CUDA {}: what it builds will not "
        "load (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)",
        Toolkit::short_version(*toolkit), Toolkit::short_version(*driver)));
    p.fixes.push_back(fmt::format("install a driver for CUDA {} or use a toolkit no newer than {}",
                                  Toolkit::short_version(*toolkit),
                                  Toolkit::short_version(*driver)));
  }
  return driver ? fmt::format("driver supports CUDA {}", Toolkit::short_version(*driver))
                : fmt::format("driver not checked ({})", why_no_driver);
}

}  // namespace

std::vector<Finding> check_cuda() {
  std::vector<Toolkit> toolkits = find_toolkits();
  Finding f{"CUDA", Status::pass, "", ""};
  if (toolkits.empty()) {
    f.status = Status::warn;
    f.finding = "no CUDA toolkit: nvcc is not on PATH, CUDA_PATH is unset, no /usr/local/cuda";
    f.fix = "install the CUDA toolkit if you build with USE_CUDA=ON";
    return {f};
  }
  Problems p;
  check_each_toolkit(toolkits, p);
  check_toolkits_agree(toolkits, p);
  std::vector<std::string> described;
  for (const Toolkit& t : toolkits) described.push_back(t.describe());
  std::string listed = fmt::format("{}", fmt::join(described, "; "));
  std::string driver_text = check_driver(toolkits.front(), p);
  if (p.problems.empty()) {
    f.finding = fmt::format("{}; {}", listed, driver_text);
    return {f};
  }
  f.status = Status::fail;
  f.finding = fmt::format("{}.{} ({}; {})", fmt::join(p.problems, "; "),
                          p.mismatch ? " TVM compiles CUDA_VERSION in from the nvcc it builds "
                                       "with and runs against another toolkit: tvm.build then "
                                       "fails with CUDA_ERROR_INVALID_VALUE and no word about "
                                       "versions."
                                     : "",
                          listed, driver_text);
  f.fix = fmt::format("{}", fmt::join(p.fixes, "; "));
  return {f};
}

}  // namespace kiln::doctor
