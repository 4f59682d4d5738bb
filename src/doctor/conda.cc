// A conda environment's LLVM against the system's. conda's llvmdev puts an llvm-config (and
// libLLVM) into the environment's bin/ and lib/; activated, that bin/ comes first on PATH, so a
// TVM build with USE_LLVM=ON compiles against conda's LLVM while the guide's libtvm was linked
// with the system's, and a process that maps conda's libLLVM next to a TVM built with another
// LLVM binds llvm:: symbols to the wrong one (the guide's segfault at import).
#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/doctor.h"
#include "python_checks.h"
#include "support.h"

namespace kiln::doctor::detail {
namespace {

namespace fs = std::filesystem;

struct CondaLlvm {
  fs::path prefix{};
  std::string package{};       // "llvmdev 15.0.7", "libllvm15 15.0.7" or "bin/llvm-config"
  std::vector<int> version{};  // of its llvm-config, else of the package
  fs::path llvm_config{};      // "" when it has none
};

bool under(const fs::path& path, const fs::path& prefix) {
  fs::path real = real_path(path);
  fs::path root = real_path(prefix);
  auto [end, rest] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
  return end == root.end();
}

// The conda environments in play: $CONDA_PREFIX and the interpreter's own prefix when it holds
// conda-meta/.
std::vector<fs::path> conda_prefixes(const PythonReport* r) {
  std::vector<fs::path> prefixes;
  auto add = [&](const fs::path& prefix) {
    if (!internal::is_dir(prefix / "conda-meta")) return;
    for (const fs::path& seen : prefixes) {
      if (real_path(seen) == real_path(prefix)) return;
    }
    prefixes.push_back(prefix);
  };
  if (std::optional<std::string> prefix = internal::env("CONDA_PREFIX")) add(*prefix);
  if (r != nullptr && r->pre && !r->prefix.empty()) add(r->prefix);
  return prefixes;
}

// The LLVM a conda environment holds: llvmdev (or libllvmNN) in its conda-meta/, or a libLLVM.
std::optional<CondaLlvm> conda_llvm(const fs::path& prefix) {
  static const std::regex package(R"((llvmdev|libllvm\d+)-(\d+(\.\d+)*)-[^-]+\.json)");
  CondaLlvm llvm{.prefix = prefix};
  std::error_code ec;
  std::vector<fs::path> metas;
  for (const auto& entry : fs::directory_iterator(prefix / "conda-meta", ec)) {
    metas.push_back(entry.path());
  }
  std::sort(metas.begin(), metas.end());
  for (const fs::path& meta : metas) {
    std::smatch m;
    std::string name = meta.filename().string();
    if (!std::regex_match(name, m, package)) continue;
    if (!llvm.package.empty() && m[1] != "llvmdev") continue;
    llvm.package = fmt::format("{} {}", m[1].str(), m[2].str());
    llvm.version = parse_version(m[2].str());
  }
  fs::path config = prefix / "bin" / "llvm-config";
  if (internal::is_file(config)) {
    llvm.llvm_config = config;
    if (std::vector<int> v = tool_version(config.string()); !v.empty()) llvm.version = v;
    if (llvm.package.empty()) llvm.package = "bin/llvm-config";
  }
  if (llvm.package.empty()) return std::nullopt;
  return llvm;
}

struct SystemLlvm {
  fs::path llvm_config{};
  std::vector<int> version{};
};

// The LLVM outside every conda environment: the first such llvm-config on PATH, else the newest
// /usr/lib/llvm-*/bin/llvm-config.
std::optional<SystemLlvm> system_llvm(const std::vector<fs::path>& prefixes) {
  auto outside = [&](const fs::path& path) {
    return std::none_of(prefixes.begin(), prefixes.end(),
                        [&](const fs::path& prefix) { return under(path, prefix); });
  };
  std::vector<fs::path> candidates;
  for (const fs::path& path : all_on_path("llvm-config")) {
    if (outside(path)) candidates.push_back(path);
  }
  std::error_code ec;
  std::vector<fs::path> system;
  for (const auto& entry : fs::directory_iterator("/usr/lib", ec)) {
    fs::path config = entry.path() / "bin" / "llvm-config";
    if (entry.path().filename().string().starts_with("llvm-") && internal::is_file(config)) {
      system.push_back(config);
    }
  }
  std::sort(system.rbegin(), system.rend());
  candidates.insert(candidates.end(), system.begin(), system.end());
  for (const fs::path& config : candidates) {
    if (std::vector<int> v = tool_version(config.string()); !v.empty()) return {{config, v}};
  }
  return std::nullopt;
}

// conda's libLLVM mapped next to a TVM built with another LLVM major; std::nullopt when not.
std::optional<Finding> mapped_conflict(const PythonReport* r, const CondaLlvm& conda) {
  if (r == nullptr || !r->imported || conda.version.empty()) return std::nullopt;
  auto it = r->libinfo.find("LLVM_VERSION");
  std::vector<int> tvm = it == r->libinfo.end() ? std::vector<int>{} : parse_version(it->second);
  if (tvm.empty() || tvm[0] == conda.version[0]) return std::nullopt;
  for (const fs::path& path : r->mapped) {
    if (!path.filename().string().starts_with("libLLVM") || !under(path, conda.prefix)) continue;
    return Finding{
        "Conda LLVM", Status::fail,
        fmt::format("import tvm in {} maps conda's {} (LLVM {}) while TVM was built with LLVM "
                    "{}: llvm:: symbols bind to the wrong LLVM (the guide's crash at import or "
                    "in FoldConstant)",
                    r->python, path.string(), version_text(conda.version), version_text(tvm)),
        "link TVM's LLVM statically with hidden symbols (USE_LLVM \"llvm-config --link-static\", "
        "HIDE_PRIVATE_SYMBOLS=ON), build TVM against conda's LLVM, or conda remove llvmdev"};
  }
  return std::nullopt;
}

Finding shadow_finding(const CondaLlvm& conda, const std::optional<SystemLlvm>& system) {
  Finding f{"Conda LLVM", Status::pass, "", ""};
  std::string what = fmt::format("conda's {} in {} (LLVM {})", conda.package, conda.prefix.string(),
                                 version_text(conda.version));
  std::vector<fs::path> on_path = all_on_path("llvm-config");
  bool first = !conda.llvm_config.empty() && !on_path.empty() && under(on_path[0], conda.prefix);
  if (!system) {
    f.finding = fmt::format("{}; no system LLVM for it to shadow", what);
    return f;
  }
  std::string other = fmt::format("the system LLVM {} ({})", version_text(system->version),
                                  system->llvm_config.string());
  bool same = !conda.version.empty() && conda.version[0] == system->version[0];
  if (!first) {
    f.finding = fmt::format("{} does not shadow {}: llvm-config on PATH is {}", what, other,
                            on_path.empty() ? "none" : on_path[0].string());
    return f;
  }
  if (same) {
    f.finding =
        fmt::format("{} comes first on PATH, before {}; the same major, so harmless", what, other);
    return f;
  }
  f.status = Status::warn;
  f.finding = fmt::format(
      "{} comes first on PATH and shadows {}: a TVM build with USE_LLVM=ON compiles against "
      "conda's LLVM, and a libtvm linked with one LLVM but run with the other's libLLVM crashes "
      "(undefined llvm:: symbols, or a segfault at import)",
      what, other);
  f.fix = fmt::format(
      "name the LLVM to build with: set(USE_LLVM \"{} --link-static\"), or conda remove llvmdev",
      system->llvm_config.string());
  return f;
}

}  // namespace

Finding conda_llvm_finding(const PythonReport* r) {
  std::vector<fs::path> prefixes = conda_prefixes(r);
  if (prefixes.empty()) {
    return {"Conda LLVM", Status::pass,
            "no conda environment (CONDA_PREFIX unset, and the interpreter's prefix has no "
            "conda-meta/): no conda LLVM to shadow the system's",
            ""};
  }
  std::vector<CondaLlvm> found;
  for (const fs::path& prefix : prefixes) {
    if (std::optional<CondaLlvm> llvm = conda_llvm(prefix)) found.push_back(*llvm);
  }
  if (found.empty()) {
    return {"Conda LLVM", Status::pass,
            fmt::format("conda environment {} holds no LLVM (no llvmdev, no bin/llvm-config)",
                        prefixes[0].string()),
            ""};
  }
  for (const CondaLlvm& conda : found) {
    if (std::optional<Finding> conflict = mapped_conflict(r, conda)) return *conflict;
  }
  return shadow_finding(found[0], system_llvm(prefixes));
}

}  // namespace kiln::doctor::detail
