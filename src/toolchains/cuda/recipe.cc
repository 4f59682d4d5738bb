// compile_recipe(): a CUDA compile as a recipe (kiln/cuda.h, kiln/recipe.h).
#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/toolchain_environment.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;

// What changes the output besides the code, which has no command line to carry it: the call's
// options and the environment variables either backend reads.
std::vector<std::string> key_material(const CompileOptions& options) {
  std::vector<std::string> material = cuda_environment().material();
  material.push_back(fmt::format("backend={}", backend_name(options.backend)));
  material.push_back(
      fmt::format("format={}", options.format ? format_name(*options.format) : "default"));
  material.push_back("arch=" + options.arch);
  for (const std::string& option : options.options) material.push_back("option=" + option);
  return material;
}

Recipe nvcc_recipe(std::string code, const CompileOptions& options) {
  std::string nvcc = (find_cuda_path() / "bin" / "nvcc").string();
  Recipe recipe{.tools = {{.what = "nvcc", .program = nvcc}},
                .key_material = key_material(options)};
  recipe.steps.emplace_back(
      CallStep{.name = "nvcc", .tool = nvcc, .call = [code = std::move(code), options] {
                 compile_cuda(code, options);
               }});
  return recipe;
}

Recipe nvrtc_recipe(std::string code, const CompileOptions& options, NvrtcCall nvrtc) {
  auto [major, minor] = nvrtc_version();
  std::string version = fmt::format("nvrtc {}.{}", major, minor);
  Recipe recipe{
      .tools = {{.what = "NVRTC", .program = version, .identity = version, .in_process = true}},
      .key_material = key_material(options)};
  recipe.steps.emplace_back(
      CallStep{.name = "nvrtc",
               .tool = version,
               .call = [code = std::move(code), options, nvrtc = std::move(nvrtc)] {
                 if (!nvrtc) {
                   compile_cuda(code, options);
                   return;
                 }
                 CompileOptions call = options;
                 call.output.clear();
                 kiln::internal::write_file_atomically(options.output, nvrtc(code, call).bytes);
               }});
  return recipe;
}

}  // namespace

Recipe compile_recipe(std::string code, const CompileOptions& options, NvrtcCall nvrtc) {
  if (options.output.empty()) {
    throw InvalidArgument("cuda::compile_recipe: the options name no output file");
  }
  Recipe recipe = options.backend == Backend::nvcc
                      ? nvcc_recipe(std::move(code), options)
                      : nvrtc_recipe(std::move(code), options, std::move(nvrtc));
  // The dump files are part of what a compile does then: a cached output would skip them.
  recipe.cacheable = !cuda_environment().get("TVM_KERNEL_DUMP");
  return recipe;
}

}  // namespace kiln::cuda
