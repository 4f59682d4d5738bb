// The Python probe: a child interpreter, started from argv (never a shell), reports what it
// finds before importing tvm, then imports it and reports what the import loaded and mapped.
// Two reports, so that an import that crashes the interpreter still leaves the first.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/process.h"

namespace kiln::doctor::detail {

// A TVM library the import did not load although TVM's own search finds it, and what loading it
// again in the same process (ctypes, RTLD_NOW) says ("" when it loads then).
struct SkippedLibrary {
  std::filesystem::path path{};
  std::string error{};
  bool cuda_driver = true;  // for libtvm_runtime_cuda.so: whether libcuda.so.1 loads
};

struct PythonReport {
  std::string python{};       // as asked for
  std::string start_error{};  // why it could not be started ("" when it was)
  RunResult run{};            // how the child ended

  // Before the import ("pre"): std::nullopt fields are what the interpreter did not find.
  bool pre = false;
  std::string executable{};
  std::vector<int> version{};
  std::filesystem::path prefix{};
  std::filesystem::path cwd{};
  std::vector<std::string> sys_path{};
  std::vector<std::string> extension_suffixes{};   // importlib.machinery.EXTENSION_SUFFIXES
  std::optional<std::filesystem::path> tvm{};      // tvm's spec origin (its __init__.py)
  std::optional<std::filesystem::path> tvm_ffi{};  // tvm_ffi's
  std::vector<std::string> tvm_entries{};          // sys.path entries holding tvm/__init__.py

  // After the import ("import"): absent when the child died during it.
  bool imported = false;  // the second report arrived
  bool import_ok = false;
  std::string import_error{};  // "ModuleNotFoundError: No module named 'tvm'"
  std::string tvm_version{};
  std::optional<bool> runtime_only{};                     // tvm.base._RUNTIME_ONLY
  std::map<std::string, std::filesystem::path> loaded{};  // tvm.base._LOADED_LIBS
  std::map<std::string, SkippedLibrary> skipped{};        // "tvm_compiler" -> ...
  std::map<std::string, std::string> libinfo{};           // USE_LLVM, LLVM_VERSION, ...
  std::vector<std::filesystem::path> mapped{};            // shared objects in /proc/<pid>/maps
  int pid = 0;                                            // the child's pid, for the findings

  // After a good import ("serialize-begin", "serialize"): an IRModule with a TE PrimFunc pickled
  // and read back, as MetaSchedule's builders do. Began without a result: the child died there.
  bool serialize_began = false;
  std::optional<bool> serialize_ok{};
  std::string serialize_error{};
  std::map<std::string, std::string> versions{};  // "apache-tvm", "apache-tvm-ffi" -> version

  // The directory holding the tvm package ("" when there is none).
  std::filesystem::path package() const { return tvm ? tvm->parent_path() : ""; }
};

// Runs `python` (a path, or a name looked up in PATH) with the probe, in kiln's own directory and
// environment, for at most `timeout`.
PythonReport probe_python(const std::string& python,
                          std::chrono::milliseconds timeout = std::chrono::seconds(180));

// Reads the probe's reports out of a finished run (exposed for tests).
void read_probe_output(PythonReport& report);

}  // namespace kiln::doctor::detail
