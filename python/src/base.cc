// kiln._kiln: base facilities (paths, tar, file locks, directory removal) and build information.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "bindings.h"
#include "kiln/file_lock.h"
#include "kiln/libinfo.h"
#include "kiln/paths.h"
#include "kiln/tar.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

void bind_paths(py::module_& m) {
  m.def(
      "which",
      [](const std::string& name) -> std::optional<std::string> {
        auto found = kiln::which(name);
        if (!found) return std::nullopt;
        return found->string();
      },
      py::arg("name"));
  m.def("is_source_path", &kiln::is_source_path, py::arg("text"));
  // shutil.rmtree(path, ignore_errors=True), without Python's per-entry overhead.
  m.def(
      "remove_tree",
      [](const std::filesystem::path& path) {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
      },
      py::arg("path"), py::call_guard<py::gil_scoped_release>());
}

void bind_tar(py::module_& m) {
  m.def(
      "tar",
      [](const std::filesystem::path& output, const Paths& files) { kiln::tar(output, files); },
      py::arg("output"), py::arg("files"), py::call_guard<py::gil_scoped_release>());
  m.def(
      "untar",
      [](const std::filesystem::path& archive, const std::filesystem::path& directory) {
        kiln::untar(archive, directory);
      },
      py::arg("archive"), py::arg("directory"), py::call_guard<py::gil_scoped_release>());
  m.def(
      "normalize_file_list_by_unpacking_tars",
      [](const std::filesystem::path& directory, const Paths& files) {
        return path_strings(kiln::normalize_file_list_by_unpacking_tars(directory, files));
      },
      py::arg("directory"), py::arg("files"), py::call_guard<py::gil_scoped_release>());
}

void bind_file_lock(py::module_& m) {
  py::class_<FileLock>(m, "FileLock")
      .def(py::init([](const std::filesystem::path& path) {
             py::gil_scoped_release unlocked;  // waiting for another holder must not stop Python
             return std::make_unique<FileLock>(path);
           }),
           py::arg("path"))
      .def("release", &FileLock::release)
      .def_property_readonly("held", &FileLock::held)
      .def_property_readonly("path", [](const FileLock& lock) { return lock.path().string(); });
}

}  // namespace

std::vector<std::string> path_strings(const Paths& paths) {
  std::vector<std::string> out;
  out.reserve(paths.size());
  for (const auto& path : paths) out.push_back(path.string());
  return out;
}

void bind_base(py::module_& m) {
  bind_paths(m);
  bind_tar(m);
  bind_file_lock(m);
  m.def("libinfo", &kiln::libinfo);
  m.def("describe_text", [] { return kiln::describe_text(kiln::describe()); });
}

}  // namespace kiln::python
