// Which TVM libraries `import tvm` loaded, from where, which it skipped without a word, and each
// loaded one judged (check_library) in the context the import really had: what the child had
// mapped, read from its /proc/<pid>/maps. When the import did not complete, the same from the
// package's files (tvm_layout.h), and the findings say which way was used.
#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal/files.h"
#include "kiln/doctor.h"
#include "kiln/elf_dynamic.h"
#include "kiln/error.h"
#include "python_checks.h"
#include "support.h"
#include "tvm_layout.h"

namespace kiln::doctor::detail {
namespace {

namespace fs = std::filesystem;

// Why a library's directory is searched: the first search directory (or the tvm_ffi package)
// that is the same directory.
std::string origin_of(const fs::path& library, const PythonReport& r) {
  fs::path dir = real_path(library.parent_path());
  if (r.tvm_ffi && real_path(r.tvm_ffi->parent_path() / "lib") == dir) return "the tvm_ffi package";
  for (const SearchDir& search : tvm_search_dirs(r.package())) {
    if (real_path(fs::absolute(search.dir)) == dir) return search.origin;
  }
  return "a directory TVM does not search itself";
}

// The site-packages holding the tvm_ffi package the interpreter finds ("" when none).
fs::path ffi_site(const PythonReport& r) {
  return r.tvm_ffi ? r.tvm_ffi->parent_path().parent_path() : fs::path();
}

// One finding for a library from check_library's: the non-passing parts, else a short pass.
Finding judged(const fs::path& library, const LoadContext& context) {
  std::vector<Finding> parts = check_library(library, context);
  Finding f{"TVM " + library.filename().string(), worst(parts), "", ""};
  if (f.status == Status::pass) {
    std::vector<std::string> needed;
    try {
      needed = read_elf_dynamic(library).needed;
    } catch (const Error&) {
    }
    f.finding = fmt::format(
        "{}: all {} DT_NEEDED resolve ({}), every undefined symbol is defined and every symbol "
        "version provided; judged {}",
        library.string(), needed.size(), fmt::join(needed, ", "), context.how);
    return f;
  }
  std::vector<std::string> problems;
  for (const Finding& part : parts) {
    if (part.status == Status::pass) continue;
    problems.push_back(part.finding);
    if (f.fix.empty()) f.fix = part.fix;
  }
  f.finding = fmt::format("{}; judged {}", fmt::join(problems, " / "),
                          context.how.empty() ? "as loaded on its own" : context.how);
  return f;
}

// A library TVM's import skipped: what that means, by library.
void note_skipped(const std::string& name, const SkippedLibrary& lib, Finding& f,
                  std::vector<std::string>& notes) {
  std::string file = lib.path.filename().string();
  if (lib.error.empty()) {
    notes.push_back(fmt::format("{} was not loaded by the import but loads when asked", file));
    return;
  }
  if (name == "tvm_compiler") {
    if (internal::env("TVM_USE_RUNTIME_LIB") == "1") {
      notes.push_back("runtime only, as TVM_USE_RUNTIME_LIB=1 asks");
      return;
    }
    f.status = Status::fail;
    notes.push_back(fmt::format(
        "import tvm fell back to runtime-only without a word: {} does not load ({}), so "
        "tvm.compile, relax and the TIR transforms are missing",
        lib.path.string(), lib.error));
    f.fix = "make what the \"TVM " + file + "\" finding names loadable, or reinstall TVM";
    return;
  }
  if (name == "tvm_runtime_cuda" && !lib.cuda_driver) {
    notes.push_back(fmt::format(
        "{} not loaded ({}): no NVIDIA driver here (libcuda.so.1 does not load), so no CUDA "
        "device from this Python; building for CUDA does not need one",
        file, lib.error));
    return;
  }
  if (f.status == Status::pass) f.status = Status::warn;
  notes.push_back(fmt::format("{} does not load ({}), and TVM went on without it",
                              lib.path.string(), lib.error));
  if (f.fix.empty()) f.fix = "make the library it names findable (ldconfig or LD_LIBRARY_PATH)";
}

// Copies of one TVM library loaded from two places.
void note_copies(const std::vector<fs::path>& libraries, Finding& f,
                 std::vector<std::string>& notes) {
  std::map<std::string, std::vector<std::string>> by_name;
  for (const fs::path& lib : libraries) by_name[lib.filename().string()].push_back(lib.string());
  for (const auto& [name, paths] : by_name) {
    if (paths.size() < 2) continue;
    f.status = Status::fail;
    notes.push_back(fmt::format("{} is loaded twice: {}: two TVMs in one process", name,
                                fmt::join(paths, " and ")));
    f.fix = "unset TVM_LIBRARY_PATH / LD_LIBRARY_PATH entries that name another TVM build";
  }
}

std::vector<Finding> observed(const PythonReport& r) {
  std::vector<fs::path> libraries;
  for (const fs::path& path : r.mapped) {
    if (is_tvm_library(path.filename().string())) libraries.push_back(path);
  }
  Finding f{"TVM libraries", Status::pass, "", ""};
  std::vector<std::string> loaded;
  for (const fs::path& lib : libraries) {
    loaded.push_back(fmt::format("{} (from {})", lib.string(), origin_of(lib, r)));
  }
  std::vector<std::string> notes;
  note_copies(libraries, f, notes);
  for (const auto& [name, lib] : r.skipped) note_skipped(name, lib, f, notes);
  f.finding =
      fmt::format("import tvm mapped {}{}{} (read from /proc/{}/maps of the child)",
                  loaded.empty() ? "no TVM library" : fmt::format("{}", fmt::join(loaded, ", ")),
                  notes.empty() ? "" : "; ", fmt::join(notes, "; "), r.pid);
  if (libraries.empty()) {
    f.status = Status::fail;
    f.fix = "the tvm package imported loads no TVM library: reinstall it (pip install apache-tvm)";
  }
  std::vector<Finding> findings{f};
  LoadContext context{r.mapped,
                      fmt::format("against what `import tvm` had mapped in {} (/proc/{}/maps, {} "
                                  "shared objects)",
                                  r.python, r.pid, r.mapped.size())};
  for (const fs::path& lib : libraries) findings.push_back(judged(lib, context));
  for (const auto& [name, lib] : r.skipped) {
    if (name != "tvm_compiler" || lib.error.empty()) continue;
    findings.push_back(judged(
        lib.path, package_load_context(r.package(), lib.path.filename().string(), ffi_site(r))));
  }
  return findings;
}

std::vector<Finding> modelled(const PythonReport& r) {
  std::vector<SearchDir> dirs = tvm_search_dirs(r.package());
  Finding f{"TVM libraries", Status::pass, "", ""};
  std::vector<FoundLibrary> found;
  for (const char* name : {"libtvm_runtime.so", "libtvm_compiler.so", "libtvm.so"}) {
    if (auto lib = find_in(dirs, name)) found.push_back(*lib);
  }
  std::vector<std::string> listed;
  for (const FoundLibrary& lib : found) {
    listed.push_back(fmt::format("{} (from {})", lib.path.string(), lib.origin));
  }
  if (found.empty()) {
    f.status = Status::fail;
    f.finding = fmt::format(
        "import tvm did not complete, and TVM's search (tvm/libinfo.py: TVM_LIBRARY_PATH, "
        "{}/lib, the source tree's build/lib and lib, LD_LIBRARY_PATH, PATH) finds no "
        "libtvm_runtime.so",
        r.package().string());
    f.fix = "build TVM (its libraries go to build/lib) or set TVM_LIBRARY_PATH to where they are";
    return {f};
  }
  f.finding = fmt::format(
      "import tvm did not complete; modelled from the package's files (tvm/libinfo.py), it "
      "loads {}",
      fmt::join(listed, ", "));
  std::vector<Finding> findings{f};
  for (const FoundLibrary& lib : found) {
    findings.push_back(judged(
        lib.path, package_load_context(r.package(), lib.path.filename().string(), ffi_site(r))));
  }
  return findings;
}

}  // namespace

std::vector<Finding> tvm_libraries_findings(const PythonReport& r) {
  if (!r.pre || !r.tvm) return {};
  if (r.imported && r.import_ok) return observed(r);
  return modelled(r);
}

}  // namespace kiln::doctor::detail
