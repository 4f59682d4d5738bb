#include "kiln/clang.h"

#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal/files.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "kiln/toolchain_environment.h"
#include "kiln_build_info.h"
#include "steps.h"

namespace kiln::clang {
namespace fs = std::filesystem;
namespace {

std::optional<int> built_with_llvm_major() {
  std::string_view id = KILN_CXX_COMPILER_ID;
  if (id != "Clang") return std::nullopt;
  return std::stoi(std::string(KILN_CXX_COMPILER_VERSION));
}

}  // namespace

std::vector<std::string> find_clang(const FindOptions& options) {
  std::vector<std::string> candidates;
  if (std::optional<int> major =
          options.llvm_major ? options.llvm_major : built_with_llvm_major()) {
    candidates.push_back(fmt::format("clang-{}.0", *major));
    candidates.push_back(fmt::format("clang-{}", *major));
  }
  candidates.insert(candidates.end(), {"clang", "clang.exe"});
  std::vector<std::string> found;
  for (const std::string& name : candidates) {
    if (std::optional<fs::path> path = which(name)) found.push_back(path->string());
  }
  if (found.empty() && options.required) {
    throw ToolNotFound(
        "clang", fmt::format("cannot find any of the following: {}", fmt::join(candidates, ", ")));
  }
  return found;
}

Recipe llvm_recipe(const std::vector<std::string>& inputs, const LlvmOptions& options,
                   const fs::path& scratch) {
  std::string cc = !options.cc.empty() ? options.cc : find_clang().front();
  fs::path output = !options.output.empty() ? options.output : scratch / "output.ll";
  std::vector<std::string> argv{cc, "-S", "-emit-llvm"};
  argv.insert(argv.end(), options.options.begin(), options.options.end());
  argv.push_back("-o");
  argv.push_back(output.string());
  Recipe recipe{.tools = {{.what = "clang", .program = cc}},
                .key_material = clang_environment().material()};
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (is_source_path(inputs[i])) {
      argv.push_back(inputs[i]);
      recipe.inputs.emplace_back(inputs[i]);
      continue;
    }
    fs::path source = scratch / fmt::format("input{}.cc", i);
    recipe.steps.emplace_back(internal::write_file_step(source, inputs[i]));
    argv.push_back(source.string());
    recipe.inputs.push_back(source);
  }
  recipe.steps.emplace_back(ToolStep{.label = "Compilation error:", .run = {.argv = argv}});
  return recipe;
}

std::string create_llvm(const std::vector<std::string>& inputs, const LlvmOptions& options) {
  TempDirectory temp;
  perform(llvm_recipe(inputs, options, temp.path()));
  return internal::read_file(!options.output.empty() ? options.output : temp / "output.ll");
}

}  // namespace kiln::clang
