#include "kiln/emcc.h"

#include <fmt/format.h>

#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/toolchain_environment.h"

namespace kiln::emcc {

namespace fs = std::filesystem;

std::optional<std::vector<fs::path>> find_wasm_lib(const std::string& name, bool optional,
                                                   const fs::path& root) {
  std::optional<std::string> home = emcc_environment().get("TVM_HOME");
  fs::path top = home ? fs::path(*home) : root;
  if (top.empty()) {
    if (optional) return std::nullopt;
    throw FileNotFound(fmt::format(
        "Cannot find {}: TVM_HOME is not set and no TVM source tree was given (it should hold "
        "web/dist/wasm/{})",
        name, name));
  }
  const fs::path dirs[] = {top / "web" / "dist" / "wasm", top / "web" / "dist"};
  std::vector<fs::path> found;
  std::error_code ec;
  for (const fs::path& dir : dirs) {
    if (fs::is_regular_file(dir / name, ec)) found.push_back(dir / name);
  }
  if (!found.empty()) return found;
  if (optional) return std::nullopt;
  throw FileNotFound(
      fmt::format("Cannot find {}; searched [{}, {}]", name, dirs[0].string(), dirs[1].string()));
}

Recipe tvmjs_wasm_recipe(const fs::path& output, const std::vector<fs::path>& objects,
                         const WasmOptions& options) {
  std::vector<std::string> argv = {options.cc,   "-O3",
                                   "-std=c++17", "--no-entry",
                                   "-s",         "WASM_BIGINT=1",
                                   "-s",         "ERROR_ON_UNDEFINED_SYMBOLS=0",
                                   "-s",         "STANDALONE_WASM=1",
                                   "-s",         "ALLOW_MEMORY_GROWTH=1",
                                   "-s",         "TOTAL_MEMORY=160MB"};
  bool with_runtime = false;
  for (const fs::path& object : objects) {
    with_runtime = with_runtime || object.string().find("wasm_runtime.bc") != std::string::npos;
  }
  std::vector<fs::path> libs;
  auto first = [&options](const std::string& name) {
    return find_wasm_lib(name, false, options.root)->front();
  };
  if (!with_runtime) libs.push_back(first("wasm_runtime.bc"));
  libs.push_back(first("tvmjs_support.bc"));
  libs.push_back(first("webgpu_runtime.bc"));
  std::error_code ec;
  for (const fs::path& lib : options.libs) {
    if (!fs::exists(lib, ec))
      throw FileNotFound(fmt::format("Cannot find library: {}", lib.string()));
    libs.push_back(lib);
  }
  argv.insert(argv.end(), {"-o", output.string()});
  Recipe recipe{.tools = {{.what = "Emscripten", .program = options.cc}},
                .key_material = emcc_environment().material()};
  for (const fs::path& lib : libs) argv.push_back(lib.string());
  for (const fs::path& object : objects) argv.push_back(object.string());
  recipe.inputs = libs;
  recipe.inputs.insert(recipe.inputs.end(), objects.begin(), objects.end());
  argv.insert(argv.end(), options.options.begin(), options.options.end());
  recipe.steps.emplace_back(ToolStep{.label = "Compilation error:", .run = {.argv = argv}});
  return recipe;
}

void create_tvmjs_wasm(const fs::path& output, const std::vector<fs::path>& objects,
                       const WasmOptions& options) {
  perform(tvmjs_wasm_recipe(output, objects, options));
}

Recipe standalone_wasm_recipe(const fs::path& output, const std::vector<fs::path>& objects,
                              const ModuleOptions& options) {
  std::vector<std::string> argv{options.cc,
                                "-O3",
                                "--no-entry",
                                "-s",
                                "STANDALONE_WASM=1",
                                "-s",
                                "ERROR_ON_UNDEFINED_SYMBOLS=0",
                                "-s",
                                "ALLOW_MEMORY_GROWTH=1"};
  if (options.cxx) argv.emplace_back("-std=c++17");
  for (const fs::path& object : objects) argv.push_back(object.string());
  argv.insert(argv.end(), options.options.begin(), options.options.end());
  argv.insert(argv.end(), {"-o", output.string()});
  Recipe recipe{.tools = {{.what = "Emscripten", .program = options.cc}},
                .inputs = objects,
                .key_material = emcc_environment().material()};
  recipe.steps.emplace_back(
      ToolStep{.label = "Compilation error:", .run = {.argv = argv, .cwd = options.cwd}});
  return recipe;
}

}  // namespace kiln::emcc
