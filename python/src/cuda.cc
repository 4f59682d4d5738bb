// kiln._kiln: kiln::cuda for kiln.support.nvcc (tvm.support.nvcc's functions;
// python/kiln/support/nvcc.py gives them tvm.support's signatures, defaults and exceptions).
#include <Python.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "bindings.h"
#include "kiln/cuda.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

using Strings = std::vector<std::string>;

// The compiled bytes as a bytearray (tvm.support's return type), made without a bytes copy.
py::object to_bytearray(const std::string& bytes) {
  PyObject* array =
      PyByteArray_FromStringAndSize(bytes.data(), static_cast<Py_ssize_t>(bytes.size()));
  if (array == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(array);
}

// The seed's arch: one name ("sm_80") or, for nvcc, a list (arch names and nvcc arguments).
using Arch = std::variant<std::string, Strings>;

// compile_cuda with the GIL released while the compiler runs; `target_format` "" is the
// backend's default, `use_cache` false keeps kiln's kernel cache out of this one compile.
// Returns (the bytes, why the cache was not used or "").
py::tuple compile_cuda(const std::string& code, const std::string& target_format, Arch arch,
                       Strings options, const std::string& path_target, const std::string& compiler,
                       bool use_cache) {
  cuda::CompileOptions request{.options = std::move(options),
                               .output = path_target,
                               .backend = cuda::backend_from_name(compiler),
                               .use_cache = use_cache};
  if (auto* one = std::get_if<std::string>(&arch)) {
    request.arch = std::move(*one);
  } else {
    request.archs = std::get<Strings>(std::move(arch));
  }
  if (!target_format.empty()) request.format = cuda::format_from_name(target_format);
  cuda::CompileResult result;
  {
    py::gil_scoped_release unlocked;
    result = cuda::compile(code, request);
  }
  return py::make_tuple(to_bytearray(result.bytes), result.warning);
}

void bind_compile(py::module_& m) {
  m.def("compile_cuda", &compile_cuda, py::arg("code"), py::arg("target_format"), py::arg("arch"),
        py::arg("options"), py::arg("path_target"), py::arg("compiler"),
        py::arg("use_cache") = true);
  m.def("uses_nvshmem", &cuda::uses_nvshmem, py::arg("code"));
}

void bind_toolkit(py::module_& m) {
  m.def(
      "find_cuda_path", [] { return cuda::find_cuda_path().string(); },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "get_cuda_version",
      [](const std::string& cuda_path) {
        cuda::CudaVersion v = cuda::get_cuda_version(cuda_path);
        return std::tuple{v.major, v.minor, v.patch};
      },
      py::arg("cuda_path"), py::call_guard<py::gil_scoped_release>());
  m.def(
      "find_nvshmem_paths",
      [] {
        cuda::NvshmemPaths paths = cuda::find_nvshmem_paths();
        return std::pair{paths.include_dir.string(), paths.lib_dir.string()};
      },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "find_libdevice_path", [](int arch) { return cuda::find_libdevice_path(arch).string(); },
      py::arg("arch"), py::call_guard<py::gil_scoped_release>());
  // (path, "") or ("", the warning to show)
  m.def(
      "callback_libdevice_path",
      [](int arch) {
        std::string warning;
        std::string path = cuda::callback_libdevice_path(arch, &warning);
        return std::pair{path, warning};
      },
      py::arg("arch"), py::call_guard<py::gil_scoped_release>());
}

void bind_compute_versions(py::module_& m) {
  m.def("compute_version_of_arch", &cuda::compute_version_of_arch, py::arg("arch"));
  m.def("get_target_compute_version", &cuda::get_target_compute_version, py::arg("arch"),
        py::call_guard<py::gil_scoped_release>());
  m.def(
      "device_compute_version",
      []() -> std::optional<std::string> { return cuda::device_compute_version(); },
      py::call_guard<py::gil_scoped_release>());
  m.def("parse_compute_version", &cuda::parse_compute_version, py::arg("compute_version"));
  m.def("have_fp16", &cuda::have_fp16, py::arg("compute_version"));
  m.def("have_int8", &cuda::have_int8, py::arg("compute_version"));
  m.def("have_tensorcore", &cuda::have_tensorcore, py::arg("compute_version"));
  m.def("have_bf16", &cuda::have_bf16, py::arg("compute_version"));
  m.def("have_fp8", &cuda::have_fp8, py::arg("compute_version"));
  m.def("have_fp4", &cuda::have_fp4, py::arg("compute_version"));
  m.def("have_cudagraph", &cuda::have_cudagraph, py::call_guard<py::gil_scoped_release>());
}

}  // namespace

void bind_cuda(py::module_& m) {
  bind_compile(m);
  bind_toolkit(m);
  bind_compute_versions(m);
}

}  // namespace kiln::python
