// kiln._kiln: kiln::cc for kiln.support.cc (tvm.support.cc's functions; python/kiln/support/cc.py
// gives them tvm.support's signatures).
#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "kiln/cc.h"
#include "kiln/error.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

using Strings = std::vector<std::string>;
using Env = std::optional<std::map<std::string, std::string>>;

// tvm.support.cc's ccache_env: ccache in front of the compiler with these variables, and
// ValueError("ccache not found") when there is no ccache.
cc::Options compile_options(Strings options, std::string cc, std::filesystem::path cwd,
                            const Env& ccache_env) {
  cc::Options out{.options = std::move(options), .cc = std::move(cc), .cwd = std::move(cwd)};
  if (ccache_env) {
    Launcher::Environment env(ccache_env->begin(), ccache_env->end());
    try {
      out.launcher = Launcher::ccache(std::move(env));
    } catch (const ToolNotFound& e) {
      throw InvalidArgument(e.what());
    }
  }
  return out;
}

// A Python object that may be dropped on any thread: its reference is released under the GIL.
std::shared_ptr<py::object> hold(py::object object) {
  return {new py::object(std::move(object)), [](py::object* held) {
            py::gil_scoped_acquire locked;
            delete held;
          }};
}

// A Python callable as a triple getter (None or a non-string result: unknown).
cc::TripleGetter python_triple_getter(py::object getter) {
  if (getter.is_none()) return {};
  return [held = hold(std::move(getter))]() -> std::optional<std::string> {
    py::gil_scoped_acquire locked;
    py::object triple = (*held)();
    if (!py::isinstance<py::str>(triple)) return std::nullopt;
    return triple.cast<std::string>();
  };
}

// A Python compile function fcompile(output, objects, options=options) as a CompileFunction.
cc::CompileFunction python_compile_function(py::object fcompile, std::string output_format,
                                            py::object get_target_triple) {
  auto fn = [held = hold(std::move(fcompile))](const std::filesystem::path& output,
                                               const Paths& objects, const Strings& options) {
    py::gil_scoped_acquire locked;
    Strings names;
    for (const auto& object : objects) names.push_back(object.string());
    (*held)(output.string(), names, py::arg("options") = options);
    return RunResult{.exit_code = 0};
  };
  return {fn, std::move(output_format), python_triple_getter(std::move(get_target_triple))};
}

cc::CrossOptions cross_options(Strings options, std::string output_format, py::object triple,
                               Paths add_files) {
  return {.options = std::move(options),
          .output_format = std::move(output_format),
          .get_target_triple = python_triple_getter(std::move(triple)),
          .add_files = std::move(add_files)};
}

void bind_compile_function(py::module_& m) {
  py::class_<cc::CompileFunction>(m, "CompileFunction")
      .def(
          "__call__",
          [](const cc::CompileFunction& self, const std::filesystem::path& output,
             const Paths& objects, const Strings& options) { self(output, objects, options); },
          py::arg("output"), py::arg("objects"), py::arg("options") = Strings{},
          py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("output_format", &cc::CompileFunction::output_format)
      .def_property_readonly("has_target_triple", &cc::CompileFunction::has_target_triple)
      .def("get_target_triple", &cc::CompileFunction::get_target_triple,
           py::call_guard<py::gil_scoped_release>());
  m.def(
      "cross_compiler_named",
      [](const std::string& compiler, Strings options, std::string output_format,
         py::object get_target_triple, Paths add_files) {
        return cc::cross_compiler(
            compiler, cross_options(std::move(options), std::move(output_format),
                                    std::move(get_target_triple), std::move(add_files)));
      },
      py::arg("compiler"), py::arg("options"), py::arg("output_format"),
      py::arg("get_target_triple"), py::arg("add_files"));
  m.def(
      "cross_compiler_wrapping",
      [](py::object base, std::string base_format, py::object base_triple, Strings options,
         std::string output_format, py::object get_target_triple, Paths add_files) {
        return cc::cross_compiler(
            python_compile_function(std::move(base), std::move(base_format),
                                    std::move(base_triple)),
            cross_options(std::move(options), std::move(output_format),
                          std::move(get_target_triple), std::move(add_files)));
      },
      py::arg("base"), py::arg("base_format"), py::arg("base_triple"), py::arg("options"),
      py::arg("output_format"), py::arg("get_target_triple"), py::arg("add_files"));
}

void bind_compiles(py::module_& m) {
  m.def("get_cc", [] { return cc::get_cc(); });
  m.def(
      "create_shared",
      [](const std::filesystem::path& output, const Paths& objects, Strings options,
         std::string compiler, std::filesystem::path cwd, const Env& ccache_env) {
        cc::create_shared(
            output, objects,
            compile_options(std::move(options), std::move(compiler), std::move(cwd), ccache_env));
      },
      py::arg("output"), py::arg("objects"), py::arg("options"), py::arg("cc"), py::arg("cwd"),
      py::arg("ccache_env"), py::call_guard<py::gil_scoped_release>());
  m.def(
      "create_executable",
      [](const std::filesystem::path& output, const Paths& objects, Strings options,
         std::string compiler, std::filesystem::path cwd, const Env& ccache_env) {
        cc::create_executable(
            output, objects,
            compile_options(std::move(options), std::move(compiler), std::move(cwd), ccache_env));
      },
      py::arg("output"), py::arg("objects"), py::arg("options"), py::arg("cc"), py::arg("cwd"),
      py::arg("ccache_env"), py::call_guard<py::gil_scoped_release>());
  m.def(
      "create_staticlib",
      [](const std::filesystem::path& output, const Paths& inputs, std::string ar) {
        cc::create_staticlib(output, inputs, {.ar = std::move(ar)});
      },
      py::arg("output"), py::arg("inputs"), py::arg("ar"),
      py::call_guard<py::gil_scoped_release>());
  m.def("get_global_symbol_section_map", &cc::get_global_symbol_section_map, py::arg("path"),
        py::arg("nm"), py::call_guard<py::gil_scoped_release>());
  m.def(
      "dump_machine",
      [](const std::string& compiler) { return cc::get_target_by_dump_machine(compiler)(); },
      py::arg("compiler"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace

void bind_cc(py::module_& m) {
  bind_compiles(m);
  bind_compile_function(m);
}

}  // namespace kiln::python
