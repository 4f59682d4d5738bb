// kiln._kiln: kiln::rocm for kiln.support.rocm (ld.lld, device-library bitcode, the GPU's
// architecture). python/kiln/support/rocm.py gives them tvm.support.rocm's signatures.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "kiln/error.h"
#include "kiln/rocm.h"
#include "runtime_error.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

void bind_linking(py::module_& m) {
  m.def(
      "rocm_find_lld",
      [](bool required, std::optional<int> llvm_major) {
        return as_runtime_error<ToolNotFound>(
            [&] { return rocm::find_lld({.required = required, .llvm_major = llvm_major}); });
      },
      py::arg("required"), py::arg("llvm_major"), py::call_guard<py::gil_scoped_release>());
  m.def(
      "rocm_link",
      [](const std::filesystem::path& in, const std::filesystem::path& out,
         const std::string& lld) { rocm::rocm_link(in, out, lld); },
      py::arg("in_file"), py::arg("out_file"), py::arg("lld"),
      py::call_guard<py::gil_scoped_release>());
  // Object bytes in, code object bytes out; the GIL is released while ld.lld runs.
  m.def(
      "rocm_callback_link",
      [](const py::bytes& object, const std::string& lld) {
        std::string in = object;
        std::string code_object;
        {
          py::gil_scoped_release released;
          code_object = rocm::callback_rocm_link(in, lld);
        }
        return py::bytes(code_object);
      },
      py::arg("object"), py::arg("lld"));
}

void bind_lookups(py::module_& m) {
  m.def(
      "rocm_bitcode_path",
      [](const std::filesystem::path& dir) {
        return as_runtime_error<FileNotFound>(
            [&] { return path_strings(rocm::callback_rocm_bitcode_path(dir)); });
      },
      py::arg("dir"), py::call_guard<py::gil_scoped_release>());
  // (arch, reason): reason is empty when rocminfo named the GPU, else why "gfx900" is used.
  m.def(
      "rocm_get_arch",
      [](const std::filesystem::path& rocm_path) {
        rocm::RocmArch arch = rocm::get_rocm_arch(rocm_path);
        return std::pair{arch.arch, arch.reason};
      },
      py::arg("rocm_path"), py::call_guard<py::gil_scoped_release>());
  m.def(
      "rocm_find_rocm_path",
      [] { return as_runtime_error<FileNotFound>([] { return rocm::find_rocm_path().string(); }); },
      py::call_guard<py::gil_scoped_release>());
}

}  // namespace

void bind_rocm(py::module_& m) {
  bind_linking(m);
  bind_lookups(m);
}

}  // namespace kiln::python
