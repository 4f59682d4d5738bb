// kiln._kiln: kiln::ndk for kiln.support.ndk (the Android NDK's compiler, $TVM_NDK_CC).
// python/kiln/support/ndk.py gives them tvm.support.ndk's signatures.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "kiln/ndk.h"

namespace py = pybind11;

namespace kiln::python {
void bind_ndk(py::module_& m) {
  // options std::nullopt: the NDK's defaults (-shared -fPIC -lm).
  m.def(
      "ndk_create_shared",
      [](const std::filesystem::path& output, const Paths& objects,
         const std::optional<std::vector<std::string>>& options) {
        ndk::create_shared(output, objects, options);
      },
      py::arg("output"), py::arg("objects"), py::arg("options"),
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "ndk_create_staticlib",
      [](const std::filesystem::path& output, const Paths& inputs) {
        ndk::create_staticlib(output, inputs);
      },
      py::arg("output"), py::arg("inputs"), py::call_guard<py::gil_scoped_release>());
  m.def("ndk_get_global_symbol_section_map", &ndk::get_global_symbol_section_map, py::arg("path"),
        py::arg("nm"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace kiln::python
