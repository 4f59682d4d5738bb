// A stand-in TVM 0.27 Python install for the doctor's tests, from real parts: shared libraries
// compiled with cc (libtvm_ffi.so; libtvm_runtime.so needing it; libtvm_compiler.so needing both;
// RUNPATH $ORIGIN, as TVM's wheels have them) and small tvm/tvm_ffi packages that a real python3
// imports and that load them as TVM 0.27 does: tvm_ffi's library RTLD_GLOBAL first (found
// through its wheel RECORD's directory), then libtvm_runtime.so from TVM_LIBRARY_PATH or the
// package's lib/ (RTLD_GLOBAL), then libtvm_compiler.so RTLD_LOCAL, falling back to runtime-only
// without a word when it does not load.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kiln/temp_directory.h"

namespace kiln::testing {

// Writes `text` to `path`, creating its directory.
void write_text(const std::filesystem::path& path, const std::string& text);

// Compiles C `source` into the shared library `out` (its soname: its file name), linked with
// `link`; fails the running test when cc does.
void build_shared_library(const std::filesystem::path& out, const std::string& source,
                          const std::vector<std::string>& link = {});

struct FakeTvm {
  TempDirectory root;
  std::filesystem::path site = root / "site";  // what goes on PYTHONPATH
  std::filesystem::path package = site / "tvm";
  std::filesystem::path ffi = site / "tvm_ffi" / "lib" / "libtvm_ffi.so";
  std::filesystem::path runtime = package / "lib" / "libtvm_runtime.so";
  std::filesystem::path compiler = package / "lib" / "libtvm_compiler.so";

  // `compiler_loads` false: the compiler also needs a library that is gone (so TVM falls back to
  // runtime-only). `init_tail`: Python appended to tvm/__init__.py.
  explicit FakeTvm(bool compiler_loads = true, const std::string& init_tail = "");
};

// python3 on PATH, or std::nullopt.
std::optional<std::string> python3();

// The directory of the tvm package `python` imports, or std::nullopt when it imports none.
std::optional<std::filesystem::path> tvm_package_of_python(const std::string& python);

// An interpreter with a real apache-tvm: $KILN_TEST_PYTHON, else the project's .deps/venv
// python (made by scripts/install-deps.sh); std::nullopt when neither imports tvm.
std::optional<std::string> python_with_tvm();

}  // namespace kiln::testing
