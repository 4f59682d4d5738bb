#include "testing/fake_tvm.h"

#include <gtest/gtest.h>

#include <fstream>

#include "internal/files.h"
#include "kiln/paths.h"
#include "kiln/process.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

// The stand-in packages: what TVM 0.27's tvm_ffi/__init__.py, tvm_ffi/libinfo.py, tvm/libinfo.py
// and tvm/base.py do about loading libraries, and nothing else.
constexpr const char* kFfiInit = R"(import ctypes
from . import libinfo
LIB = ctypes.CDLL(str(libinfo._find_library_by_basename("apache-tvm-ffi", "tvm_ffi")),
                  ctypes.RTLD_GLOBAL)
)";
constexpr const char* kFfiLibinfo = R"(from pathlib import Path
def _find_library_by_basename(package, name, extra_lib_paths=None):
    for d in list(extra_lib_paths or []) + [Path(__file__).parent / "lib"]:
        p = (Path(d) / ("lib%s.so" % name)).resolve()
        if p.is_file():
            return p
    raise RuntimeError("Cannot find lib%s.so" % name)
)";
constexpr const char* kTvmLibinfo = R"(import os
from pathlib import Path
def package_lib_paths():
    first = [Path(os.environ["TVM_LIBRARY_PATH"])] if os.environ.get("TVM_LIBRARY_PATH") else []
    return first + [Path(__file__).parent / "lib"]
)";
constexpr const char* kTvmBase = R"(import ctypes
import tvm_ffi
from tvm_ffi import libinfo as _ffi
from . import libinfo
_LOADED_LIBS = {}
_RUNTIME_ONLY = False
def _load(name, mode):
    path = _ffi._find_library_by_basename("tvm", name, libinfo.package_lib_paths())
    _LOADED_LIBS[name] = ctypes.CDLL(str(path), mode)
_load("tvm_runtime", ctypes.RTLD_GLOBAL)
try:
    _load("tvm_compiler", ctypes.RTLD_LOCAL)
except (RuntimeError, OSError):
    _RUNTIME_ONLY = True
)";

}  // namespace

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

void build_shared_library(const fs::path& out, const std::string& source,
                          const std::vector<std::string>& link) {
  fs::create_directories(out.parent_path());
  fs::path c = out.parent_path() / (out.stem().string() + ".c");
  write_text(c, source);
  std::vector<std::string> argv{"cc",
                                "-shared",
                                "-fPIC",
                                c.string(),
                                "-o",
                                out.string(),
                                "-Wl,-soname," + out.filename().string(),
                                "-Wl,--no-as-needed"};
  argv.insert(argv.end(), link.begin(), link.end());
  RunResult r = run({.argv = argv});
  ASSERT_TRUE(r.ok()) << r.command_line << "\n" << r.output;
  fs::remove(c);
}

FakeTvm::FakeTvm(bool compiler_loads, const std::string& init_tail) {
  write_text(site / "tvm_ffi" / "__init__.py", kFfiInit);
  write_text(site / "tvm_ffi" / "libinfo.py", kFfiLibinfo);
  write_text(site / "apache_tvm_ffi-0.1.0.dist-info" / "RECORD",
             "tvm_ffi/__init__.py,,\ntvm_ffi/lib/libtvm_ffi.so,sha256=x,1\n");
  write_text(package / "__init__.py",
             "from . import base\n__version__ = \"0.27.fake\"\n" + init_tail);
  write_text(package / "libinfo.py", kTvmLibinfo);
  write_text(package / "base.py", kTvmBase);
  build_shared_library(ffi, "int tvm_ffi_answer(void) { return 42; }\n");
  build_shared_library(runtime,
                       "int tvm_ffi_answer(void);\n"
                       "int tvm_runtime_answer(void) { return tvm_ffi_answer(); }\n",
                       {"-L" + ffi.parent_path().string(), "-ltvm_ffi", "-Wl,-rpath,$ORIGIN"});
  std::vector<std::string> link{"-L" + runtime.parent_path().string(), "-ltvm_runtime",
                                "-L" + ffi.parent_path().string(), "-ltvm_ffi",
                                "-Wl,-rpath,$ORIGIN"};
  if (!compiler_loads) {
    fs::path gone = root / "gone" / "libtvm_llvm_gone.so";
    build_shared_library(gone, "int llvm_gone(void) { return 1; }\n");
    link.push_back("-L" + gone.parent_path().string());
    link.emplace_back("-ltvm_llvm_gone");
  }
  build_shared_library(
      compiler,
      "int tvm_runtime_answer(void);\nint tvm_ffi_answer(void);\n"
      "int tvm_compile(void) { return tvm_runtime_answer() + tvm_ffi_answer(); }\n",
      link);
  fs::remove_all(root / "gone");
}

std::optional<std::string> python3() {
  std::optional<fs::path> python = which("python3");
  if (!python) return std::nullopt;
  return python->string();
}

std::optional<fs::path> tvm_package_of_python(const std::string& python) {
  RunResult r;
  try {
    r = run({.argv = {python, "-c", "import os, tvm; print(os.path.dirname(tvm.__file__))"},
             .merge_stderr = false,
             .timeout = std::chrono::seconds(180)});
  } catch (const CannotRunTool&) {
    return std::nullopt;
  }
  if (!r.ok()) return std::nullopt;
  return fs::path(r.output.substr(0, r.output.find('\n')));
}

std::optional<std::string> python_with_tvm() {
  std::optional<std::string> chosen = internal::env("KILN_TEST_PYTHON");
  if (!chosen) chosen = std::string(KILN_SOURCE_DIR) + "/.deps/venv/bin/python";
  if (!tvm_package_of_python(*chosen)) return std::nullopt;
  return chosen;
}

}  // namespace kiln::testing
