// The Python probe. Its script is kept to what any CPython 3 has (json, os, sys, importlib,
// ctypes), calls TVM's own search for the libraries it did not load (tvm_ffi.libinfo, guarded:
// older TVMs lack it), and reads the child's own /proc/<pid>/maps before anything else is loaded
// so the maps show what `import tvm` mapped and nothing more.
#include "python_probe.h"

#include <nlohmann/json.hpp>

#include <sstream>

#include "kiln/error.h"

namespace kiln::doctor::detail {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMarker = "KILN-DOCTOR-PROBE ";

constexpr const char* kProbe = R"PY(import json, os, sys

def emit(phase, data):
    data["phase"] = phase
    sys.stdout.write("\nKILN-DOCTOR-PROBE " + json.dumps(data) + "\n")
    sys.stdout.flush()

def origin(name):
    try:
        import importlib.util
        spec = importlib.util.find_spec(name)
    except Exception:
        return None
    if spec is None:
        return None
    if spec.origin and spec.origin != "namespace":
        return spec.origin
    places = list(spec.submodule_search_locations or [])
    return places[0] if places else None

def suffixes():
    try:
        import importlib.machinery
        return list(importlib.machinery.EXTENSION_SUFFIXES)
    except Exception:
        return []

def mapped():
    seen = []
    try:
        with open("/proc/%d/maps" % os.getpid()) as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) < 6:
                    continue
                path = fields[5].strip()
                if path.endswith(" (deleted)"):
                    path = path[:-10]
                name = os.path.basename(path)
                shared = name.endswith(".so") or ".so." in name
                if path.startswith("/") and shared and path not in seen:
                    seen.append(path)
    except OSError:
        pass
    return seen

def skipped(libs):
    found = {}
    try:
        import ctypes
        from pathlib import Path
        from tvm_ffi import libinfo as ffi_info
        import tvm.libinfo as tvm_info
        dirs = list(tvm_info.package_lib_paths())
    except BaseException:
        return found
    runtime = libs.get("tvm_runtime")
    for name in ("tvm_runtime", "tvm_compiler", "tvm_runtime_extra", "tvm_runtime_cuda"):
        if name in libs:
            continue
        where = dirs
        if name not in ("tvm_runtime", "tvm_compiler") and runtime is not None:
            where = [Path(runtime._name).resolve().parent]
        try:
            path = str(ffi_info._find_library_by_basename("tvm", name, where))
        except BaseException:
            continue
        try:
            ctypes.CDLL(path, ctypes.RTLD_LOCAL)
            error = ""
        except OSError as e:
            error = str(e)
        found[name] = {"path": path, "error": error}
        if name == "tvm_runtime_cuda":
            try:
                ctypes.CDLL("libcuda.so.1")
                found[name]["driver"] = True
            except OSError:
                found[name]["driver"] = False
    return found

def libinfo():
    try:
        import tvm.support
        info = tvm.support.libinfo()
        keys = ("USE_LLVM", "LLVM_VERSION", "USE_CUDA", "HIDE_PRIVATE_SYMBOLS")
        return dict((k, str(info[k])) for k in keys if k in info)
    except BaseException:
        return {}

emit("pre", {
    "executable": sys.executable, "version": list(sys.version_info[:3]),
    "prefix": sys.prefix, "cwd": os.getcwd(), "path": list(sys.path),
    "suffixes": suffixes(), "tvm": origin("tvm"), "tvm_ffi": origin("tvm_ffi"),
    "entries": [p for p in sys.path
                if os.path.isfile(os.path.join(p or os.curdir, "tvm", "__init__.py"))],
})
post = {"ok": False, "error": "", "version": "", "pid": os.getpid()}
try:
    import tvm
    post["ok"] = True
    post["version"] = str(getattr(tvm, "__version__", ""))
except BaseException as e:
    post["error"] = "%s: %s" % (type(e).__name__, e)
post["mapped"] = mapped()
base = sys.modules.get("tvm.base")
libs = getattr(base, "_LOADED_LIBS", None) or {}
post["runtime_only"] = getattr(base, "_RUNTIME_ONLY", None)
post["loaded"] = dict((k, str(getattr(v, "_name", ""))) for k, v in libs.items())
if post["ok"]:
    post["libinfo"] = libinfo()
    post["skipped"] = skipped(libs)
emit("import", post)
if post["ok"]:
    # What every MetaSchedule build does: pickle an IRModule that holds a TE PrimFunc. A TVM
    # built against another tvm_ffi crashes the interpreter here: "serialize-begin" without
    # "serialize" tells that.
    versions = {}
    try:
        from importlib import metadata
        for dist in ("apache-tvm", "apache-tvm-ffi"):
            try:
                versions[dist] = metadata.version(dist)
            except Exception:
                pass
    except Exception:
        pass
    emit("serialize-begin", {"versions": versions})
    done = {"ok": False, "error": ""}
    try:
        import pickle
        from tvm import te
        a = te.placeholder((4,), name="A")
        b = te.compute((4,), lambda i: a[i] + 1.0, name="B")
        mod = tvm.IRModule({"main": te.create_prim_func([a, b])})
        tvm.ir.assert_structural_equal(pickle.loads(pickle.dumps(mod)), mod)
        done["ok"] = True
    except BaseException as e:
        done["error"] = "%s: %s" % (type(e).__name__, (str(e).strip().splitlines() or [""])[-1])
    emit("serialize", done)
)PY";

std::vector<std::string> strings(const nlohmann::json& list) {
  std::vector<std::string> out;
  if (!list.is_array()) return out;
  for (const auto& item : list) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

std::string string_of(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

std::optional<fs::path> path_of(const nlohmann::json& object, const char* key) {
  std::string value = string_of(object, key);
  if (value.empty()) return std::nullopt;
  return fs::path(value);
}

void read_pre(PythonReport& r, const nlohmann::json& pre) {
  r.pre = true;
  r.executable = string_of(pre, "executable");
  if (auto it = pre.find("version"); it != pre.end() && it->is_array()) {
    for (const auto& part : *it) {
      if (part.is_number_integer()) r.version.push_back(part.get<int>());
    }
  }
  r.prefix = string_of(pre, "prefix");
  r.cwd = string_of(pre, "cwd");
  r.sys_path = strings(pre.value("path", nlohmann::json()));
  r.extension_suffixes = strings(pre.value("suffixes", nlohmann::json()));
  r.tvm = path_of(pre, "tvm");
  r.tvm_ffi = path_of(pre, "tvm_ffi");
  // An older Python names a module found through "" (the current directory) relatively.
  for (std::optional<fs::path>* origin : {&r.tvm, &r.tvm_ffi}) {
    if (*origin && (*origin)->is_relative()) *origin = (r.cwd / **origin).lexically_normal();
  }
  r.tvm_entries = strings(pre.value("entries", nlohmann::json()));
}

void read_import(PythonReport& r, const nlohmann::json& post) {
  r.imported = true;
  r.import_ok = post.value("ok", false);
  r.import_error = string_of(post, "error");
  r.tvm_version = string_of(post, "version");
  r.pid = post.value("pid", 0);
  if (auto it = post.find("runtime_only"); it != post.end() && it->is_boolean()) {
    r.runtime_only = it->get<bool>();
  }
  // value() returns a copy: keep it alive for the loop (items() only refers to it).
  const nlohmann::json loaded = post.value("loaded", nlohmann::json::object());
  const nlohmann::json skipped = post.value("skipped", nlohmann::json::object());
  const nlohmann::json libinfo = post.value("libinfo", nlohmann::json::object());
  for (const auto& [name, path] : loaded.items()) {
    if (path.is_string()) r.loaded[name] = path.get<std::string>();
  }
  for (const auto& [name, lib] : skipped.items()) {
    if (lib.is_object()) {
      r.skipped[name] = {string_of(lib, "path"), string_of(lib, "error"),
                         lib.value("driver", true)};
    }
  }
  for (const auto& [key, value] : libinfo.items()) {
    if (value.is_string()) r.libinfo[key] = value.get<std::string>();
  }
  for (const std::string& path : strings(post.value("mapped", nlohmann::json()))) {
    r.mapped.emplace_back(path);
  }
}

}  // namespace

void read_probe_output(PythonReport& report) {
  std::istringstream lines(report.run.output);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(kMarker)) continue;
    nlohmann::json data =
        nlohmann::json::parse(line.substr(std::string_view(kMarker).size()), nullptr, false);
    if (!data.is_object()) continue;
    std::string phase = string_of(data, "phase");
    try {
      if (phase == "pre") read_pre(report, data);
      if (phase == "import") read_import(report, data);
      if (phase == "serialize-begin") {
        report.serialize_began = true;
        const nlohmann::json versions = data.value("versions", nlohmann::json::object());
        for (const auto& [name, version] : versions.items()) {
          if (version.is_string()) report.versions[name] = version.get<std::string>();
        }
      }
      if (phase == "serialize") {
        report.serialize_ok = data.value("ok", false);
        report.serialize_error = string_of(data, "error");
      }
    } catch (const nlohmann::json::exception&) {
      // A field of the wrong type (value() throws): what was read before it stays.
    }
  }
}

PythonReport probe_python(const std::string& python, std::chrono::milliseconds timeout) {
  PythonReport report{.python = python};
  try {
    report.run = run({.argv = {python, "-c", kProbe}, .merge_stderr = false, .timeout = timeout});
  } catch (const CannotRunTool& e) {
    report.start_error = e.what();
    return report;
  }
  read_probe_output(report);
  return report;
}

}  // namespace kiln::doctor::detail
