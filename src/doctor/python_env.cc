// The environment variables TVM's Python side reads: TVM_LIBRARY_PATH (tvm/libinfo.py puts it
// first in the library search, as given, and skips it without a word when it holds nothing) and
// TVM_HOME (a source tree: tvm.support.emcc's web/ and relax's nn.extern headers).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal/files.h"
#include "kiln/doctor.h"
#include "python_checks.h"
#include "support.h"
#include "tvm_layout.h"

namespace kiln::doctor::detail {
namespace {

namespace fs = std::filesystem;

// The libtvm_runtime.so (or libtvm.so) the import mapped, else the one the model picks; "".
std::string runtime_in_use(const PythonReport* r) {
  if (r == nullptr || !r->tvm) return "";
  if (r->imported) {
    for (const fs::path& path : r->mapped) {
      std::string name = path.filename().string();
      if (name == "libtvm_runtime.so" || name == "libtvm.so") return path.string();
    }
  }
  for (const char* name : {"libtvm_runtime.so", "libtvm.so"}) {
    if (auto found = find_in(tvm_search_dirs(r->package()), name)) {
      return fmt::format("{} (modelled on tvm/libinfo.py)", found->path.string());
    }
  }
  return "";
}

std::string instead(const PythonReport* r) {
  std::string runtime = runtime_in_use(r);
  return runtime.empty() ? "the package's own libraries" : runtime;
}

// The TVM libraries in `dir`, by name.
std::vector<std::string> tvm_libraries_in(const fs::path& dir) {
  std::vector<std::string> found;
  for (const char* name : {"libtvm_runtime.so", "libtvm_compiler.so", "libtvm.so"}) {
    if (internal::is_file(dir / name)) found.emplace_back(name);
  }
  return found;
}

Finding variable_problem(const std::string& check, const std::string& finding,
                         const std::string& fix) {
  return {check, Status::warn, finding, fix};
}

}  // namespace

Finding tvm_library_path_finding(const PythonReport* r) {
  const std::string check = "TVM_LIBRARY_PATH";
  std::optional<std::string> value = internal::env("TVM_LIBRARY_PATH");
  if (!value) {
    return {check, Status::pass,
            "unset: import tvm takes its libraries from the package's lib/ (or a source tree's "
            "build/lib/)",
            ""};
  }
  fs::path dir = fs::absolute(*value).lexically_normal();
  std::string relative =
      fs::path(*value).is_relative() ? fmt::format(" (relative: from here, {})", dir.string()) : "";
  std::string fix = fmt::format(
      "export TVM_LIBRARY_PATH=<the absolute directory holding libtvm_runtime.so>, or unset it");
  if (internal::is_file(dir)) {
    return variable_problem(
        check,
        fmt::format("TVM_LIBRARY_PATH={}{} names a file; TVM reads it as a directory, finds "
                    "nothing in it, and loads {} instead",
                    *value, relative, instead(r)),
        fmt::format("export TVM_LIBRARY_PATH={}", dir.parent_path().string()));
  }
  std::vector<std::string> libraries = tvm_libraries_in(dir);
  if (!internal::is_dir(dir) || libraries.empty()) {
    return variable_problem(
        check,
        fmt::format("TVM_LIBRARY_PATH={}{} {}: TVM skips it without a word and loads {} instead",
                    *value, relative,
                    internal::is_dir(dir) ? "holds no libtvm_runtime.so" : "points nowhere",
                    instead(r)),
        fix);
  }
  std::string listed = fmt::format("{}", fmt::join(libraries, ", "));
  if (!relative.empty()) {
    return variable_problem(
        check,
        fmt::format("TVM_LIBRARY_PATH={} is relative: it resolves against each process's current "
                    "directory (from here {}, which holds {}); run from anywhere else, import "
                    "tvm silently loads other libraries",
                    *value, dir.string(), listed),
        fmt::format("export TVM_LIBRARY_PATH={}", dir.string()));
  }
  return {check, Status::pass,
          fmt::format("TVM_LIBRARY_PATH={} holds {}: import tvm searches it before the "
                      "package's own lib/ (it loads {})",
                      *value, listed, instead(r)),
          ""};
}

Finding tvm_home_finding(const PythonReport* r) {
  const std::string check = "TVM_HOME";
  std::optional<std::string> value = internal::env("TVM_HOME");
  if (!value) {
    return {check, Status::pass,
            "unset (TVM's Python side reads it only to find a source tree's web/ for emcc and "
            "headers for relax's nn.extern)",
            ""};
  }
  fs::path home = fs::absolute(*value).lexically_normal();
  std::string relative = fs::path(*value).is_relative()
                             ? fmt::format(" (relative: from here, {})", home.string())
                             : "";
  std::string fix = "export TVM_HOME=<the absolute path of a TVM source checkout>, or unset it";
  if (!internal::is_dir(home)) {
    return variable_problem(
        check,
        fmt::format("TVM_HOME={}{} points nowhere: tvm.support.emcc.find_wasm_lib and relax's "
                    "nn.extern, which read it, fail or fall back",
                    *value, relative),
        fix);
  }
  bool tree =
      internal::is_dir(home / "include" / "tvm") || internal::is_dir(home / "python" / "tvm");
  if (!tree) {
    return variable_problem(
        check,
        fmt::format("TVM_HOME={}{} is not a TVM source tree (no include/tvm/, no python/tvm/)",
                    *value, relative),
        fix);
  }
  if (!relative.empty()) {
    return variable_problem(
        check,
        fmt::format("TVM_HOME={} is relative: it resolves against each process's current "
                    "directory (from here {})",
                    *value, home.string()),
        fmt::format("export TVM_HOME={}", home.string()));
  }
  fs::path own = home / "python" / "tvm";
  if (r != nullptr && r->tvm && internal::is_dir(own) &&
      real_path(own) != real_path(r->package())) {
    return variable_problem(
        check,
        fmt::format("TVM_HOME={} is a TVM source tree, but {} imports tvm from {}, not from {}: "
                    "headers and web/ come from one TVM, the libraries from another",
                    *value, r->python, r->package().string(), own.string()),
        fmt::format("export PYTHONPATH={}/python, or point TVM_HOME at the TVM that is "
                    "imported",
                    home.string()));
  }
  return {check, Status::pass, fmt::format("TVM_HOME={}: a TVM source tree", *value), ""};
}

}  // namespace kiln::doctor::detail
