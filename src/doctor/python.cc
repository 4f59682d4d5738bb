// The Python side of the doctor: which tvm `python -c "import tvm"` imports and from where, and
// the environment variables TVM's Python side reads (TVM_LIBRARY_PATH, TVM_HOME).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal/files.h"
#include "internal/path_list.h"
#include "kiln/doctor.h"
#include "python_checks.h"
#include "support.h"
#include "tvm_layout.h"

namespace kiln::doctor {
namespace detail {
namespace {

namespace fs = std::filesystem;

// `path` made absolute against `cwd` ("" is the current directory itself, as on sys.path), with
// no trailing separator, so that two spellings of one directory compare equal.
fs::path absolute_in(const fs::path& path, const fs::path& cwd) {
  fs::path base = cwd.empty() ? fs::current_path() : cwd;
  fs::path full = (path.is_absolute() ? path : base / path).lexically_normal();
  if (full.has_relative_path() && full.filename().empty()) full = full.parent_path();
  return full;
}

// The sys.path entry the tvm package was found in: "" when none holds it (an import hook).
std::optional<std::string> entry_of(const PythonReport& r) {
  fs::path parent = r.tvm->parent_path().parent_path().lexically_normal();
  for (const std::string& entry : r.tvm_entries) {
    if (absolute_in(entry, r.cwd) == parent) return entry;
  }
  return std::nullopt;
}

// Where a sys.path entry comes from, in words.
std::string where_from(const std::string& entry, const fs::path& cwd) {
  fs::path place = absolute_in(entry, cwd);
  if (entry.empty() || place == absolute_in("", cwd)) {
    return "the current directory, which `python -c` puts first on sys.path";
  }
  if (std::optional<std::string> value = internal::env("PYTHONPATH")) {
    for (const std::string& item : internal::split_path_list(*value)) {
      if (!item.empty() && absolute_in(item, cwd) == place) {
        return fmt::format(
            "the PYTHONPATH entry {}{}", item,
            fs::path(item).is_relative() ? " (relative to the current directory)" : "");
      }
    }
  }
  std::string text = place.string();
  if (text.find("site-packages") != std::string::npos ||
      text.find("dist-packages") != std::string::npos) {
    return "the interpreter's site-packages";
  }
  return "a sys.path entry of the interpreter's own (a .pth file or its defaults)";
}

// Extension modules of the tvm and tvm_ffi packages built for another Python: none of their
// *.cpython-* files has a suffix this interpreter loads. "" when none are, or there are none.
std::string foreign_extensions(const PythonReport& r) {
  std::vector<fs::path> roots{r.package()};
  if (r.tvm_ffi) roots.push_back(r.tvm_ffi->parent_path());
  std::vector<std::string> foreign;
  bool matching = false;
  for (const fs::path& root : roots) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (name.find(".cpython-") == std::string::npos || !name.ends_with(".so")) continue;
      // Module "core" is core<suffix>: everything from the first dot must be a suffix.
      std::string tail = name.substr(name.find('.'));
      bool loads = std::find(r.extension_suffixes.begin(), r.extension_suffixes.end(), tail) !=
                   r.extension_suffixes.end();
      matching = matching || loads;
      if (!loads) foreign.push_back(it->path().string());
    }
  }
  if (matching || foreign.empty() || r.extension_suffixes.empty()) return "";
  return fmt::format("; {} {} built for another Python: this one loads extension modules named *{}",
                     fmt::join(foreign, ", "), foreign.size() == 1 ? "was" : "were",
                     r.extension_suffixes[0]);
}

Finding import_failed(const PythonReport& r, const std::string& from) {
  Finding f{"Python TVM", Status::fail, "", ""};
  if (!r.imported) {
    f.finding = fmt::format(
        "{} died while importing tvm from {} ({}): {}. A crash inside `import tvm` is most often "
        "two LLVMs or two C++ runtimes in one process; the TVM library findings below are "
        "modelled from the package's files",
        interpreter_text(r), r.package().string(), from, r.run.status_text());
    f.fix =
        "run the library findings' fixes; `LD_DEBUG=libs python -c 'import tvm'` shows the "
        "last library loaded before the crash";
    return f;
  }
  f.finding = fmt::format("`import tvm` in {} fails: {} (tvm from {}, {}){}", interpreter_text(r),
                          r.import_error, r.package().string(), from, foreign_extensions(r));
  f.fix =
      "install a TVM built for this interpreter (pip install apache-tvm in its environment), or "
      "rebuild TVM's Python extension with it";
  return f;
}

}  // namespace

std::string interpreter_text(const PythonReport& r) {
  if (r.executable.empty()) return r.python;
  if (r.executable == r.python) {
    return fmt::format("{} (Python {})", r.python, fmt::join(r.version, "."));
  }
  return fmt::format("{} ({}, Python {})", r.python, r.executable, fmt::join(r.version, "."));
}

Finding python_package_finding(const PythonReport& r) {
  Finding f{"Python TVM", Status::pass, "", ""};
  if (!r.start_error.empty() || !r.pre) {
    f.status = Status::fail;
    f.finding = !r.start_error.empty()
                    ? fmt::format("cannot run {}: {}", r.python, r.start_error)
                    : fmt::format("{} did not run kiln's probe ({}): {}", r.python,
                                  r.run.status_text(), r.run.error_output + r.run.output);
    f.fix = "pass --python with a Python 3 interpreter that runs";
    return f;
  }
  if (!r.tvm) {
    f.status = Status::warn;
    f.finding = fmt::format("{} finds no tvm package on its sys.path: `import tvm` fails",
                            interpreter_text(r));
    f.fix =
        "install TVM into that environment (pip install apache-tvm), or put a TVM checkout's "
        "python/ directory on PYTHONPATH";
    return f;
  }
  std::optional<std::string> entry = entry_of(r);
  std::string from = entry ? where_from(*entry, r.cwd)
                           : "an import hook, not a sys.path entry (an editable install?)";
  if (!r.imported || !r.import_ok) return import_failed(r, from);
  f.finding = fmt::format("{} imports tvm {} from {} ({})", interpreter_text(r), r.tvm_version,
                          r.package().string(), from);
  // Other directories holding a tvm (one directory may be on sys.path twice: "" and PYTHONPATH).
  std::vector<std::string> shadowed;
  fs::path used = real_path(r.package());
  for (const std::string& other : r.tvm_entries) {
    fs::path copy = absolute_in(other, r.cwd) / "tvm";
    if (real_path(copy) == used) continue;
    if (std::find(shadowed.begin(), shadowed.end(), copy.string()) == shadowed.end()) {
      shadowed.push_back(copy.string());
    }
  }
  if (!shadowed.empty()) {
    f.status = Status::warn;
    f.finding += fmt::format(
        "; it shadows {}: which tvm runs depends on PYTHONPATH and the current directory",
        fmt::join(shadowed, ", "));
    f.fix = "keep one tvm: remove the PYTHONPATH entry, or pip uninstall the other";
  }
  return f;
}

std::optional<Finding> tvm_serialization_finding(const PythonReport& r) {
  if (!r.serialize_began) return std::nullopt;
  auto version = [&](const char* dist) {
    auto it = r.versions.find(dist);
    return it == r.versions.end() ? std::string("(unknown)") : it->second;
  };
  std::string pair = fmt::format("apache-tvm {} with apache-tvm-ffi {}", version("apache-tvm"),
                                 version("apache-tvm-ffi"));
  const std::string check = "TVM IR serialization";
  if (r.serialize_ok.value_or(false)) {
    return Finding{check, Status::pass,
                   fmt::format("{}: an IRModule with a TE PrimFunc pickles and reads back, as "
                               "MetaSchedule's builders need ({})",
                               interpreter_text(r), pair),
                   ""};
  }
  // apache-tvm 0.27 crashes in tvm::ffi::ToJSONGraph with apache-tvm-ffi 0.1.15.
  std::string fix =
      version("apache-tvm").starts_with("0.27")
          ? "pip install 'apache-tvm-ffi==0.1.14.post1' (the release apache-tvm 0.27 works with)"
          : "install the apache-tvm-ffi release that your apache-tvm was built against";
  if (!r.serialize_ok) {
    return Finding{check, Status::fail,
                   fmt::format("{}: pickling an IRModule (what every MetaSchedule build does) "
                               "crashed the interpreter ({}); {}",
                               interpreter_text(r), r.run.status_text(), pair),
                   fix};
  }
  return Finding{check, Status::fail,
                 fmt::format("{}: an IRModule does not pickle and read back ({}); {}",
                             interpreter_text(r), r.serialize_error, pair),
                 fix};
}

}  // namespace detail

std::vector<Finding> check_python_tvm(const std::filesystem::path& python) {
  std::string interpreter = python.string();
  if (interpreter.empty()) {
    std::optional<std::filesystem::path> found = detail::first_on_path("python3");
    if (!found) {
      return {{"Python TVM", Status::pass,
               "skipped: no python3 on PATH (and no --python), so no `import tvm` to check", ""},
              detail::tvm_library_path_finding(nullptr),
              detail::tvm_home_finding(nullptr),
              detail::conda_llvm_finding(nullptr)};
    }
    interpreter = found->string();
  }
  detail::PythonReport report = detail::probe_python(interpreter);
  std::vector<Finding> findings{detail::python_package_finding(report),
                                detail::tvm_library_path_finding(&report),
                                detail::tvm_home_finding(&report)};
  for (Finding& f : detail::tvm_libraries_findings(report)) findings.push_back(std::move(f));
  if (std::optional<Finding> f = detail::tvm_serialization_finding(report)) {
    findings.push_back(std::move(*f));
  }
  findings.push_back(detail::conda_llvm_finding(&report));
  return findings;
}

}  // namespace kiln::doctor
