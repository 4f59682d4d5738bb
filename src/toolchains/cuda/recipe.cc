// compile_recipe(): a CUDA compile as a recipe (kiln/cuda.h, kiln/recipe.h).
#include <chrono>

#include <fmt/format.h>

#include "backends.h"
#include "internal/files.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/process.h"
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
  for (const std::string& arch : options.archs) material.push_back("archs=" + arch);
  for (const std::string& option : options.options) material.push_back("option=" + option);
  return material;
}

// <cuda>/bin/nvcc; ToolNotFound when there is no toolkit, so that a caller can tell a missing
// toolkit from every other error.
std::string nvcc_program() {
  try {
    return (find_cuda_path() / "bin" / "nvcc").string();
  } catch (const FileNotFound& e) {
    throw ToolNotFound("nvcc", e.what());
  }
}

Recipe nvcc_recipe(std::string code, const CompileOptions& options) {
  std::string nvcc = nvcc_program();
  Recipe recipe{.tools = {{.what = "nvcc", .program = nvcc}},
                .key_material = key_material(options)};
  recipe.steps.emplace_back(
      CallStep{.name = "nvcc", .tool = nvcc, .call = [code = std::move(code), options] {
                 compile_cuda(code, options);
               }});
  return recipe;
}

// Compiles with NVRTC (in kiln's compile server, else through `nvrtc` when given, else in this
// process), and records the compile in the caller's
// RunScope beside the tools that ran: a command line, how it ended, and NVRTC's log (its
// warnings and ptxas' resource lines), which kiln build keeps.
void compile_and_record(const std::string& code, const CompileOptions& options,
                        const NvrtcCall& nvrtc) {
  auto started = std::chrono::steady_clock::now();
  // The command line is the one the compile's plan made (internal::plan_of): just "nvrtc" when
  // there was none (no arch given and no GPU to ask, contradicting options).
  RunScope::Record compiled{.command_line = "nvrtc", .ending = Ending::exited(1)};
  auto record = [&] {
    compiled.duration = std::chrono::steady_clock::now() - started;
    if (RunScope* scope = RunScope::current()) scope->record_in_process(std::move(compiled));
  };
  try {
    CompileResult result = internal::compile_or_elsewhere(code, options, nvrtc);
    compiled.command_line = std::move(result.command_line);
    compiled.output = std::move(result.log);
  } catch (const ToolFailed& e) {
    compiled.command_line = e.command_line();
    record();
    throw;
  } catch (...) {
    record();
    throw;
  }
  compiled.ending = Ending::exited(0);
  record();
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
                 compile_and_record(code, options, nvrtc);
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
