// kiln._kiln, the extension module of the Python package: one bind_<area>() per source file, each
// adding that area's functions to the module. The functions take and return plain Python values
// (str paths, lists, dicts; every timeout in seconds, seconds.h); the Python modules of
// python/kiln/ give them tvm.support's names, signatures and defaults. Every function that runs a
// tool or blocks releases the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <filesystem>
#include <string>
#include <vector>

namespace kiln::python {

using Paths = std::vector<std::filesystem::path>;

// Each path as a str for Python (pybind11 would hand out pathlib.Path objects).
std::vector<std::string> path_strings(const Paths& paths);

// kiln::Error and its subclasses -> Python's built-in exception types (see errors.cc).
void bind_errors(pybind11::module_& m);
// which, is_source_path, tar, untar, file locks, directory removal, libinfo, describe.
void bind_base(pybind11::module_& m);
// kiln's settings table: setting_flag, setting_text, setting_seconds, setting, settings.
void bind_settings(pybind11::module_& m);
// kiln::cc: compilers, static libraries, symbol maps, target triples, cross compilers.
void bind_cc(pybind11::module_& m);
// kiln::rocm: ld.lld, ROCm device libraries, the AMD GPU's architecture.
void bind_rocm(pybind11::module_& m);
// kiln::ndk: the Android NDK's compiler.
void bind_ndk(pybind11::module_& m);
// kiln::xcode: Apple toolchains through xcrun.
void bind_xcode(pybind11::module_& m);
// kiln::emcc: Emscripten for tvmjs.
void bind_emcc(pybind11::module_& m);
// kiln::clang: finding clang, LLVM IR.
void bind_clang(pybind11::module_& m);
// kiln::cuda: CUDA compiles (nvcc, NVRTC), the toolkit's parts, compute capabilities.
void bind_cuda(pybind11::module_& m);
// kiln::pool: workers and executors running pickled Python calls (kiln.support.popen_pool), the
// worker program's serve loop, kill_child_processes.
void bind_pool(pybind11::module_& m);
// Warm worker templates: prepare_template, wait_for_template, template_stats,
// serve_pool_template (pool_template.cc); called by bind_pool.
void bind_pool_template(pybind11::module_& m);

}  // namespace kiln::python
