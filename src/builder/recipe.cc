// prepare(): a job's recipe, from the toolchain module that knows its kind (recipe.h).
#include "recipe.h"

#include <fmt/format.h>

#include "compilers.h"
#include "dependency_output.h"
#include "internal/files.h"
#include "kiln/cc.h"
#include "kiln/clang.h"
#include "kiln/cuda.h"
#include "kiln/cuda_messages.h"
#include "kiln/emcc.h"
#include "kiln/error.h"
#include "kiln/ndk.h"
#include "kiln/rocm.h"
#include "kiln/tar.h"
#include "nvrtc_worker.h"
#include "route.h"

namespace kiln::build::detail {
namespace {

namespace fs = std::filesystem;

// Chooses one job's recipe from the toolchain modules.
class Chooser {
 public:
  Chooser(const Job& job, const Options& options, const Workspace& workspace)
      : job_(job), options_(options), ws_(workspace) {}

  Recipe choose();
  // How to learn the headers of a compile that reports none itself (set by cuda_kernel()).
  JobRecipe::Headers headers;
  // The key the toolchain module keyed the job under itself (set by cuda_kernel()): JobRecipe::key.
  std::string key;

 private:
  // The job's sources: its files, or its inline code at work_dir/<name>.<ext>, written by a
  // first step of the recipe.
  std::vector<fs::path> sources() {
    if (job_.code.empty()) return job_.sources;
    inline_source_ = ws_.work_dir / (job_.name + extension_of(job_.language));
    return {inline_source_};
  }
  // Sources, then inputs: what a link reads.
  std::vector<fs::path> objects() {
    std::vector<fs::path> all = sources();
    all.insert(all.end(), ws_.inputs.begin(), ws_.inputs.end());
    return all;
  }
  Recipe by_kind();
  // The job's launcher (route_of), with the workspace's launcher_env.
  std::optional<Launcher> launcher();
  cc::Options cc_options();
  Recipe static_library();
  Recipe cuda_kernel();
  // cuda::kernel_cache_key() of the job's compile; "" (and `recipe` not cacheable) when it cannot
  // be known, "" when there is no cache.
  std::string kernel_key(const std::string& code, const cuda::CompileOptions& compile,
                         Recipe& recipe);
  Recipe rocm_code_object();

  const Job& job_;
  const Options& options_;
  const Workspace& ws_;
  fs::path inline_source_;
};

std::optional<Launcher> Chooser::launcher() {
  std::optional<LauncherKind> kind = route_of(job_, options_).launcher;
  if (!kind) return std::nullopt;
  std::string name(launcher_name(*kind));
  if (!installed(name)) throw Absent{missing_tool(name, name)};
  return Launcher::of(*kind, ws_.launcher_env);
}

cc::Options Chooser::cc_options() {
  return {.options = job_.options, .cc = c_compiler(job_), .launcher = launcher()};
}

Recipe Chooser::static_library() {
  fs::path scratch = ws_.work_dir / "static";
  fs::create_directory(scratch);
  if (job_.toolchain == Toolchain::ndk)
    return ndk::staticlib_recipe(ws_.output, ws_.inputs, scratch);
  return cc::staticlib_recipe(ws_.output, ws_.inputs, scratch, {.ar = "ar"});
}

Recipe Chooser::cuda_kernel() {
  std::string code = !job_.code.empty()     ? job_.code
                     : ws_.files != nullptr ? ws_.files->content(job_.sources.front())
                                            : internal::read_file(job_.sources.front());
  const std::vector<std::string>& options = job_.options;  // as `kiln cuda compile` gets them
  cuda::NvrtcCall nvrtc;
  if (pool::Worker* worker = ws_.nvrtc_worker) nvrtc = nvrtc_in_worker(*worker);
  cuda::CompileOptions compile{
      .format = job_.format,
      .arch = job_.arch,
      .options = options,
      .output = ws_.output,
      .source_path = job_.sources.empty() ? fs::path() : job_.sources.front(),
      .backend = job_.backend,
      .launcher = launcher(),
      // The job is looked up and stored under the kernel cache's own key (kernel_key()), by
      // make(): the compile itself keeps out of the cache.
      .use_cache = false};
  Recipe recipe;
  try {
    recipe = cuda::compile_recipe(code, compile, std::move(nvrtc));
  } catch (const ToolNotFound& e) {  // no NVRTC library, no nvcc; any other error is a failure
    bool with_nvrtc = job_.backend == cuda::Backend::nvrtc;
    throw Absent{fmt::format("toolchain absent: {}{}", with_nvrtc ? "NVRTC: " : "", e.what())};
  }
  if (recipe.cacheable) key = kernel_key(code, compile, recipe);
  headers = [code = std::move(code), compile](const fs::path& scratch) {
    cuda::CompileOptions scan = compile;
    scan.launcher.reset();  // a header scan is no compile to distribute
    return cuda::headers_read(code, scan, scratch);
  };
  if (compile.launcher) {
    recipe.tools.insert(recipe.tools.begin(), {.what = compile.launcher->name,
                                               .program = compile.launcher->prefix.front()});
  }
  return recipe;
}

std::string Chooser::kernel_key(const std::string& code, const cuda::CompileOptions& compile,
                                Recipe& recipe) {
  if (ws_.cache == nullptr || !ws_.cache->enabled()) return {};
  try {
    // The key of compile_cuda, `kiln cuda compile` and kiln.support.nvcc.compile_cuda (and of
    // the remote level): a kernel either compiled is a hit for the other.
    return cuda::kernel_cache_key(code, compile, *ws_.cache);
  } catch (const Error&) {
    // No key without an arch, a toolkit, NVRTC: the compile fails the same way, and says so
    // where it always has (the job's failure, its command); nothing to look up or store.
    recipe.cacheable = false;
    return {};
  }
}

Recipe Chooser::rocm_code_object() {
  rocm::CodeObjectOptions options{.language = rocm_language(job_.language),
                                  .arch = job_.arch,
                                  .options = job_.options,
                                  .clang = job_.cc};
  if (options.language != rocm::SourceLanguage::assembly) {  // assembly links no library
    try {
      options.device_libraries = rocm::callback_rocm_bitcode_path();
    } catch (const Error& e) {
      throw Absent{fmt::format("toolchain absent: ROCm device libraries: {}", e.what())};
    }
  }
  return rocm::code_object_recipe(sources().front(), ws_.output, options);
}

Recipe Chooser::by_kind() {
  switch (job_.kind) {
    case JobKind::object:
      return cc::object_recipe(ws_.output, sources(), cc_options());
    case JobKind::shared:
      if (job_.toolchain == Toolchain::ndk) {
        std::optional<std::vector<std::string>> options;
        if (!job_.options.empty()) options = job_.options;
        return ndk::shared_recipe(ws_.output, objects(), options);
      }
      return cc::shared_recipe(ws_.output, objects(), cc_options());
    case JobKind::executable:
      return cc::program_recipe(ws_.output, objects(), cc_options());
    case JobKind::static_library:
      return static_library();
    case JobKind::llvm_ir:
      return clang::llvm_recipe({sources().front().string()},
                                {.output = ws_.output, .options = job_.options, .cc = job_.cc},
                                ws_.work_dir);
    case JobKind::cuda:
      return cuda_kernel();
    case JobKind::rocm_code_object:
      return rocm_code_object();
    case JobKind::wasm:
      return emcc::standalone_wasm_recipe(ws_.output, objects(),
                                          {.options = job_.options,
                                           .cc = job_.cc.empty() ? "emcc" : job_.cc,
                                           .cxx = job_.language == Language::cxx,
                                           .cwd = ws_.work_dir});
    case JobKind::tar:
      break;
  }
  return tar_recipe(ws_.output, ws_.inputs);
}

// A CUDA compile that fails (here, in kiln's compile server or in a pool worker) is told briefly
// and in the manifest's words: the library's message starts with the whole source (as the
// seed's), which a build log would repeat for every failed kernel.
void tell_cuda_failures_briefly(Recipe& recipe) {
  for (RecipeStep& step : recipe.steps) {
    auto* call = std::get_if<CallStep>(&step);
    if (call == nullptr) continue;
    call->call = [inner = std::move(call->call)] {
      try {
        inner();
      } catch (const ToolFailed& e) {
        throw cuda::brief_failure(e, cuda::Audience::manifest);
      }
    };
  }
}

Recipe Chooser::choose() {
  Recipe recipe = by_kind();
  if (job_.kind == JobKind::cuda) tell_cuda_failures_briefly(recipe);
  if (!inline_source_.empty()) {
    recipe.steps.insert(recipe.steps.begin(),
                        CallStep{.name = "write " + inline_source_.filename().string(),
                                 .call = [file = inline_source_, code = job_.code] {
                                   internal::write_file_atomically(file, code);
                                 }});
  }
  bool uses_c_toolchain = job_.kind == JobKind::object || job_.kind == JobKind::shared ||
                          job_.kind == JobKind::executable || job_.kind == JobKind::static_library;
  if (uses_c_toolchain && job_.toolchain == Toolchain::xcode) {
    recipe.tools.insert(recipe.tools.begin(), {.what = "Xcode (xcrun)", .program = "xcrun"});
  }
  return recipe;
}

}  // namespace

JobRecipe prepare(const Job& job, const Options& options, const Workspace& workspace,
                  ToolIdentities& identities) {
  JobRecipe result;
  try {
    Chooser chooser(job, options, workspace);
    result.recipe = chooser.choose();
    result.headers = std::move(chooser.headers);
    result.key = std::move(chooser.key);
    if (result.headers) result.depfile_cwd = fs::current_path();  // NVRTC's "..." are from there
  } catch (const Absent& absent) {
    result.skip_reason = absent.reason;
    return result;
  } catch (const ToolNotFound& e) {
    result.skip_reason = e.tool() == "TVM_NDK_CC" ? std::string(kNeedsNdkCc)
                                                  : fmt::format("toolchain absent: {}", e.what());
    return result;
  }
  for (const RecipeTool& tool : result.recipe.tools) {
    if (!tool.in_process && !installed(tool.program)) {
      result.skip_reason = missing_tool(tool.what, tool.program.empty() ? tool.what : tool.program);
      return result;
    }
  }
  try {
    identities.identify(result.recipe);  // the steps now run the very files identified
  } catch (const ToolNotFound& e) {      // a step's own PATH lacks it
    result.skip_reason = fmt::format("toolchain absent: {}", e.what());
    return result;
  }
  ask_for_dependencies(job, workspace, result);
  return result;
}

}  // namespace kiln::build::detail
