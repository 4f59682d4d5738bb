#include "kiln/doctor.h"

#include <algorithm>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/cc.h"
#include "kiln/error.h"
#include "kiln/machine.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "support.h"

namespace kiln::doctor {
namespace {

namespace fs = std::filesystem;

using detail::first_line;
using detail::version_of;

// std::optional, std::variant, std::string_view and std::filesystem in C++17: what TVM needs.
constexpr const char* kProbe = R"(#include <filesystem>
#include <optional>
#include <string_view>
#include <variant>
int main() {
  std::optional<int> o = 1;
  std::variant<int, std::string_view> v = std::string_view("kiln");
  std::filesystem::path p = std::filesystem::temp_directory_path() / "kiln";
  return (o && std::get<std::string_view>(v).size() == 4 && !p.empty()) ? 0 : 1;
}
)";

}  // namespace

std::string_view status_name(Status status) { return enum_name(kStatusNames, status); }

std::vector<int> parse_version(std::string_view text) {
  static const std::regex number(R"((\d+)\.(\d+)(?:\.(\d+))?)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(text.begin(), text.end(), m, number)) return {};
  return {std::stoi(m[1].str()), std::stoi(m[2].str()), m[3].matched ? std::stoi(m[3].str()) : 0};
}

Finding check_cxx_compiler() {
  Finding f{"C++ compiler", Status::pass, "", ""};
  std::optional<std::string> cc = cc::get_cc();
  if (!cc) {
    f.status = Status::fail;
    f.finding =
        "no C++ compiler: CXX and CC are unset and none of g++, gcc, clang++, clang, c++, "
        "cc is on PATH";
    f.fix = "install one (Debian: apt-get install build-essential) or set CXX";
    return f;
  }
  std::optional<RunResult> version = version_of(*cc);
  std::string name = version ? first_line(version->output) : "(no --version)";
  TempDirectory temp;
  internal::write_file(temp / "probe.cc", kProbe);
  RunResult build = run(
      {.argv = {*cc, "-std=c++17", (temp / "probe.cc").string(), "-o", (temp / "probe").string()},
       .timeout = std::chrono::seconds(120)});
  RunResult ran = build.ok() ? run({.argv = {(temp / "probe").string()}}) : RunResult{};
  if (!build.ok() || !ran.ok()) {
    f.status = Status::fail;
    f.finding = fmt::format(
        "{} ({}) cannot build and run a C++17 program using std::optional, std::variant, "
        "std::string_view and std::filesystem: {}\n{}",
        *cc, name, build.ok() ? "the program failed: " + ran.status_text() : build.status_text(),
        build.output);
    f.fix =
        "use a compiler with complete C++17 support (GCC >= 9 or clang >= 9), e.g. set "
        "CXX=g++-12";
    return f;
  }
  f.finding = fmt::format(
      "{}: {}; builds and runs a C++17 std::optional/variant/string_view/"
      "filesystem probe",
      *cc, name);
  return f;
}

Finding check_cmake() {
  Finding f{"CMake", Status::pass, "", ""};
  std::vector<int> v = detail::tool_version("cmake");
  if (v.empty()) {
    f.status = Status::fail;
    f.finding = "cmake is not on PATH (or `cmake --version` failed)";
    f.fix = "install CMake >= 3.18 (Debian: apt-get install cmake)";
    return f;
  }
  std::string text = detail::version_text(v);
  if (v < std::vector<int>{3, 18, 0}) {
    f.status = Status::fail;
    f.finding = fmt::format("cmake {}: TVM needs 3.18 or newer", text);
    f.fix = "install a newer CMake (pip install cmake, or Kitware's apt repository)";
  } else if (v[0] == 3 && v[1] == 22) {
    f.status = Status::warn;
    f.finding = fmt::format(
        "cmake {}: 3.22 misreads set(USE_LLVM llvm-config-15) as a path rather than a command "
        "and puts a bad -I into CMAKE_CXX_FLAGS",
        text);
    f.fix =
        "give USE_LLVM the full path of llvm-config (e.g. /usr/bin/llvm-config-15), or use "
        "CMake >= 3.23";
  } else {
    f.finding = fmt::format("cmake {} (>= 3.18)", text);
  }
  return f;
}

Finding check_python() {
  Finding f{"Python", Status::pass, "", ""};
  std::vector<int> v = detail::tool_version("python3");
  if (v.empty()) {
    f.status = Status::warn;
    f.finding = "python3 is not on PATH: TVM's Python package cannot be used";
    f.fix = "install Python >= 3.8.10 (Debian: apt-get install python3)";
  } else if (v < std::vector<int>{3, 8, 10}) {
    f.status = Status::warn;
    f.finding = fmt::format("python3 {}: TVM needs 3.8.10 or newer", detail::version_text(v));
    f.fix = "install Python >= 3.8.10 (a virtual environment keeps the system one intact)";
  } else {
    f.finding = fmt::format("python3 {} (>= 3.8.10)", detail::version_text(v));
  }
  return f;
}

Finding check_parallel_jobs() {
  unsigned cores = available_cores();
  unsigned long long available = available_memory();
  int jobs = recommended_jobs(cores, available);
  Finding f{"Parallel jobs", Status::pass, "", ""};
  f.finding = fmt::format(
      "{} cores, {:.1f} GiB available: -j{} (one job per core, but no more than one per 3 GiB: "
      "a clang/LLVM compile of TVM's large files takes about 2.5 GiB, and too many at once "
      "get killed by the OOM killer)",
      cores, static_cast<double>(available) / static_cast<double>(kGiB), jobs);
  f.fix = fmt::format("build with -j{} (cmake --build build -j{})", jobs, jobs);
  if (static_cast<unsigned>(jobs) < cores) f.status = Status::warn;
  return f;
}

Finding check_ccache() {
  Finding f{"ccache", Status::pass, "", ""};
  std::optional<fs::path> ccache = which("ccache");
  if (!ccache) {
    f.status = Status::warn;
    f.finding = "ccache is not installed: every rebuild compiles everything again";
    f.fix =
        "apt-get install ccache, then set(USE_CCACHE ON) or -DCMAKE_CXX_COMPILER_LAUNCHER=ccache "
        "(the guide measured repeat builds going from 12 min to 2 min)";
    return f;
  }
  std::optional<RunResult> version = version_of(ccache->string());
  f.finding = fmt::format("{} ({})", ccache->string(),
                          version ? first_line(version->output) : "version unknown");
  return f;
}

std::vector<Finding> run_checks(const Options& options) {
  std::vector<Finding> findings{check_cxx_compiler(), check_cmake()};
  auto append = [&findings](std::vector<Finding> more) {
    findings.insert(findings.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  };
  append(check_llvm(options.llvm_config));
  append(check_cuda());
  findings.push_back(check_python());
  append(check_python_tvm(options.python));
  findings.push_back(check_parallel_jobs());
  findings.push_back(check_ccache());
  append(check_remote_cache());
  if (!options.source.empty()) append(check_submodules(options.source));
  if (!options.library.empty()) append(check_library(options.library));
  return findings;
}

}  // namespace kiln::doctor
