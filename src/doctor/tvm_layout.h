// TVM's Python package on disk: where TVM 0.27's Python side looks for its shared libraries and
// what it loads before them, modelled from the files (no Python runs). kiln doctor uses it to
// judge a TVM library in the context TVM loads it in, and to say what `import tvm` would load
// when the import itself cannot be watched.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/doctor.h"

namespace kiln::doctor::detail {

// One directory TVM searches, and why it is searched ("TVM_LIBRARY_PATH", ...).
struct SearchDir {
  std::filesystem::path dir;
  std::string origin;
};

// TVM 0.27's search for libtvm_runtime.so / libtvm_compiler.so (tvm/libinfo.py
// package_lib_paths, then tvm_ffi/libinfo.py's environment fallback): $TVM_LIBRARY_PATH as given
// (a relative value resolves against the current directory), the package's lib/, the source
// tree's build/lib/ and lib/, then $LD_LIBRARY_PATH and $PATH entries. `package` is the tvm
// package directory (the one holding __init__.py).
std::vector<SearchDir> tvm_search_dirs(const std::filesystem::path& package);

// The first `file_name` in `dirs` that is a file (symlinks resolved, as pathlib's resolve() does).
struct FoundLibrary {
  std::filesystem::path path;
  std::string origin;
};
std::optional<FoundLibrary> find_in(const std::vector<SearchDir>& dirs, std::string_view file_name);

// The tvm package a TVM library belongs to: tvm/lib/<library> with tvm/__init__.py (a wheel),
// or <tree>/build/lib/, <tree>/lib/ or <tree>/build/ with <tree>/python/tvm/__init__.py (a source
// build). std::nullopt when neither.
std::optional<std::filesystem::path> tvm_package_of(const std::filesystem::path& library);

// libtvm_ffi.so of the tvm_ffi package installed in `site` (a site-packages directory): the path
// its wheel RECORD names (what tvm_ffi/libinfo.py loads), else tvm_ffi/lib/.
std::optional<std::filesystem::path> tvm_ffi_library_in(const std::filesystem::path& site);

// The context TVM's Python package in `package` loads its library `name` in (what
// kiln::doctor::tvm_package_context returns once it knows the package). The tvm_ffi package is
// looked for in `ffi_site` ("" = the directory holding `package`).
LoadContext package_load_context(const std::filesystem::path& package, const std::string& name,
                                 const std::filesystem::path& ffi_site = {});

// True for the TVM libraries TVM's Python side loads itself: libtvm*.so, not the FFI's own
// test library.
bool is_tvm_library(std::string_view file_name);

}  // namespace kiln::doctor::detail
