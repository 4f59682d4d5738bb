#include "kiln/ndk.h"

#include "kiln/cc.h"
#include "kiln/error.h"
#include "kiln/tar.h"
#include "kiln/temp_directory.h"
#include "kiln/toolchain_environment.h"
#include "steps.h"

namespace kiln::ndk {

namespace fs = std::filesystem;

fs::path compiler() {
  std::optional<std::string> cc = ndk_environment().get("TVM_NDK_CC");
  if (!cc) {
    throw ToolNotFound("TVM_NDK_CC",
                       "Require environment variable TVM_NDK_CC to be the NDK standalone compiler");
  }
  return *cc;
}

Recipe shared_recipe(const fs::path& output, const std::vector<fs::path>& objects,
                     const std::optional<std::vector<std::string>>& options) {
  std::string cc = compiler().string();
  std::vector<std::string> argv = {cc, "-o", output.string()};
  for (const fs::path& object : objects) argv.push_back(object.string());
  std::vector<std::string> flags =
      options.value_or(std::vector<std::string>{"-shared", "-fPIC", "-lm"});
  argv.insert(argv.end(), flags.begin(), flags.end());
  Recipe recipe{.tools = {{.what = "the NDK compiler", .program = cc}},
                .inputs = objects,
                .key_material = ndk_environment().material()};
  recipe.steps.emplace_back(ToolStep{.label = "Compilation error:", .run = {.argv = argv}});
  return recipe;
}

Recipe staticlib_recipe(const fs::path& output, const std::vector<fs::path>& inputs,
                        const fs::path& scratch) {
  fs::path tools = compiler().parent_path();
  std::string llvm_ar = (tools / "llvm-ar").string();
  std::string llvm_ranlib = (tools / "llvm-ranlib").string();
  fs::path library = scratch / ("lib" + output.filename().string());
  std::vector<std::string> ar = {llvm_ar, "qcs", library.string()};
  for (const fs::path& object : normalize_file_list_by_unpacking_tars(scratch, inputs)) {
    ar.push_back(object.string());
  }
  Recipe recipe{.tools = {{.what = "the NDK's llvm-ar", .program = llvm_ar},
                          {.what = "the NDK's llvm-ranlib", .program = llvm_ranlib}},
                .inputs = inputs};
  recipe.steps.emplace_back(ToolStep{.label = "AR error:", .run = {.argv = ar}});
  recipe.steps.emplace_back(
      ToolStep{.label = "Ranlib error:", .run = {.argv = {llvm_ranlib, library.string()}}});
  recipe.steps.emplace_back(internal::move_into_place_step(library, output));
  return recipe;
}

RunResult create_shared(const fs::path& output, const std::vector<fs::path>& objects,
                        const std::optional<std::vector<std::string>>& options) {
  return perform(shared_recipe(output, objects, options));
}

RunResult create_staticlib(const fs::path& output, const std::vector<fs::path>& inputs) {
  TempDirectory temp;
  return perform(staticlib_recipe(output, inputs, temp.path()));
}

std::map<std::string, std::string> get_global_symbol_section_map(const fs::path& path,
                                                                 const std::string& nm) {
  return cc::get_global_symbol_section_map(
      path, nm.empty() ? (compiler().parent_path() / "llvm-nm").string() : nm);
}

std::optional<std::string> get_target_triple() {
  return cc::get_target_by_dump_machine(compiler().string())();
}

}  // namespace kiln::ndk
