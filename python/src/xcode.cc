// kiln._kiln: kiln::xcode for kiln.support.xcode (dylibs, Metal libraries, Core ML models through
// xcrun). python/kiln/support/xcode.py gives them tvm.support.xcode's signatures.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/xcode.h"
#include "runtime_error.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

// tvm.support.xcode.xcrun's contract: `xcrun args...`'s output (stdout and stderr together)
// whatever its exit status; only a missing xcrun raises (FileNotFoundError).
py::bytes xcrun_output(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"xcrun"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string output;
  {
    py::gil_scoped_release released;
    output = run({.argv = argv}).output;
  }
  return {output};
}

}  // namespace

void bind_xcode(py::module_& m) {
  m.def("xcode_xcrun", &xcrun_output, py::arg("args"));
  m.def(
      "xcode_create_dylib",
      [](const std::filesystem::path& output, const Paths& objects, const std::string& arch,
         const std::string& sdk, const std::optional<std::string>& min_os_version) {
        xcode::create_dylib(output, objects, arch, sdk, min_os_version);
      },
      py::arg("output"), py::arg("objects"), py::arg("arch"), py::arg("sdk"),
      py::arg("min_os_version"), py::call_guard<py::gil_scoped_release>());
  // The metallib's bytes (also written to `output` when it is not empty).
  m.def(
      "xcode_compile_metal",
      [](const std::string& code, const std::filesystem::path& output, const std::string& sdk,
         const std::optional<std::string>& min_os_version) {
        std::string bytes;
        {
          py::gil_scoped_release released;
          bytes = xcode::compile_metal(code, output, sdk, min_os_version);
        }
        return py::bytes(bytes);
      },
      py::arg("code"), py::arg("output"), py::arg("sdk"), py::arg("min_os_version"));
  m.def(
      "xcode_compile_coreml",
      [](const std::filesystem::path& model, const std::string& model_name,
         const std::filesystem::path& out_dir) {
        return as_runtime_error<FileNotFound>(
            [&] { return xcode::compile_coreml(model, model_name, out_dir).string(); });
      },
      py::arg("model"), py::arg("model_name"), py::arg("out_dir"),
      py::call_guard<py::gil_scoped_release>());
}

}  // namespace kiln::python
