// kiln._kiln: kiln::emcc for kiln.support.emcc (tvmjs WebAssembly modules with Emscripten).
// python/kiln/support/emcc.py gives them tvm.support.emcc's signatures.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "kiln/emcc.h"
#include "kiln/error.h"
#include "runtime_error.h"

namespace py = pybind11;

namespace kiln::python {
void bind_emcc(py::module_& m) {
  // Every match under $TVM_HOME, else under `root` (TVM's source tree); None when nothing is
  // found and `optional`.
  m.def(
      "emcc_find_wasm_lib",
      [](const std::string& name, bool optional,
         const std::filesystem::path& root) -> std::optional<std::vector<std::string>> {
        std::optional<Paths> found = as_runtime_error<FileNotFound>(
            [&] { return emcc::find_wasm_lib(name, optional, root); });
        if (!found) return std::nullopt;
        std::vector<std::string> names;
        for (const auto& path : *found) names.push_back(path.string());
        return names;
      },
      py::arg("name"), py::arg("optional"), py::arg("root"),
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "emcc_create_tvmjs_wasm",
      [](const std::filesystem::path& output, const Paths& objects,
         std::vector<std::string> options, std::string cc, Paths libs, std::filesystem::path root) {
        emcc::WasmOptions wasm{.options = std::move(options),
                               .cc = std::move(cc),
                               .libs = std::move(libs),
                               .root = std::move(root)};
        as_runtime_error<FileNotFound>([&] { emcc::create_tvmjs_wasm(output, objects, wasm); });
      },
      py::arg("output"), py::arg("objects"), py::arg("options"), py::arg("cc"), py::arg("libs"),
      py::arg("root"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace kiln::python
