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

// Every check, in a fixed order. (Issue 7 in progress: the LLVM, CUDA, submodule and library
// checks, and their --source/--library/--llvm-config inputs, are still to come.)
std::vector<Finding> run_checks();

// The individual checks (run_checks calls these).
Finding check_cxx_compiler();
Finding check_cmake();
Finding check_python();
Finding check_parallel_jobs();
Finding check_ccache();

// The -j the guide recommends: max(1, min(cores, available memory / 3 GiB)).
int recommended_jobs(unsigned cores, unsigned long long available_bytes);

// "3.22.1" -> {3, 22, 1}; missing fields are 0. Empty when the text holds no version.
std::vector<int> parse_version(std::string_view text);

}  // namespace kiln::doctor
