// kiln doctor: the build-environment traps of the TVM build guide, as checks a machine runs.
// Each check returns a Finding; the CLI renders them as a table or JSON.
//
//   for (const kiln::doctor::Finding& f : kiln::doctor::run_checks())
//     if (f.status == kiln::doctor::Status::fail) std::cerr << f.check << ": " << f.fix << "\n";
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::doctor {

enum class Status { pass, warn, fail };
std::string_view status_name(Status status);  // "PASS", "WARN", "FAIL"

struct Finding {
  std::string check;  // "C++ compiler", "CMake", ...
  Status status = Status::pass;
  std::string finding;  // what was found, and why it matters
  std::string fix;      // what to do about it ("" when nothing)
};

struct Options {
  std::filesystem::path llvm_config;  // the llvm-config to judge; "" = the first on PATH
  std::filesystem::path source;       // a git checkout whose submodules to check; "" = none
  std::filesystem::path library;      // a built shared library to check; "" = none
};

// Every check, in a fixed order: C++ compiler, CMake, LLVM, CUDA, Python, parallel jobs, ccache,
// then the submodules of options.source and the library options.library when given.
std::vector<Finding> run_checks(const Options& options = {});

// The individual checks (run_checks calls these).
Finding check_cxx_compiler();
Finding check_cmake();
Finding check_python();
Finding check_parallel_jobs();
Finding check_ccache();
// The selected llvm-config (version >= 14, headers present), whether clang / ld.lld / llvm-config
// on PATH are one LLVM major, and how many LLVM installations there are: up to three findings.
std::vector<Finding> check_llvm(const std::filesystem::path& llvm_config = {});
// nvcc on PATH (its real toolkit), $CUDA_PATH and /usr/local/cuda: one version, their version
// files agreeing with their nvcc, and no newer than the driver when one is installed.
std::vector<Finding> check_cuda();
// Each submodule (recursively) at the commit the superproject's index records.
std::vector<Finding> check_submodules(const std::filesystem::path& source);
// A built shared library: its DT_NEEDED, a dynamic libLLVM, symbols nothing it loads defines,
// and symbol versions (GLIBCXX_, CXXABI_, GLIBC_) its libraries lack.
std::vector<Finding> check_library(const std::filesystem::path& library);

// "3.22.1" -> {3, 22, 1}; missing fields are 0. Empty when the text holds no version.
std::vector<int> parse_version(std::string_view text);

}  // namespace kiln::doctor
