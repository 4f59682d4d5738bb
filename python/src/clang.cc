// kiln._kiln: kiln::clang for kiln.support.clang (finding clang, LLVM IR from C/C++).
// python/kiln/support/clang.py gives them tvm.support.clang's signatures.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "kiln/clang.h"
#include "kiln/error.h"
#include "runtime_error.h"

namespace py = pybind11;

namespace kiln::python {

void bind_clang(py::module_& m) {
  m.def(
      "clang_find_clang",
      [](bool required, std::optional<int> llvm_major) {
        return as_runtime_error<ToolNotFound>(
            [&] { return clang::find_clang({.required = required, .llvm_major = llvm_major}); });
      },
      py::arg("required"), py::arg("llvm_major"), py::call_guard<py::gil_scoped_release>());
  m.def(
      "clang_create_llvm",
      [](const std::vector<std::string>& inputs, std::filesystem::path output,
         std::vector<std::string> options, std::string cc) {
        return clang::create_llvm(
            inputs,
            {.output = std::move(output), .options = std::move(options), .cc = std::move(cc)});
      },
      py::arg("inputs"), py::arg("output"), py::arg("options"), py::arg("cc"),
      py::call_guard<py::gil_scoped_release>());
}

}  // namespace kiln::python
