// -MD injection for the compile step of a kiln build job (dependency_output.h).
#include "dependency_output.h"

#include <algorithm>
#include <filesystem>
#include <variant>

namespace kiln::build::detail {
namespace {

namespace fs = std::filesystem;

// Whether the job runs a C-family compiler over a source, whose headers only the compiler knows.
bool compiles_c_source(const Job& job) {
  if (job.sources.empty() && job.code.empty()) return false;
  if (job.language == Language::llvm_ir) return false;
  // Assembly that is not preprocessed (.s; ROCm's "-x assembler") includes nothing the compiler
  // reports, and clang warns that -MD goes unused there.
  bool plain_assembly = job.code.empty() && std::all_of(job.sources.begin(), job.sources.end(),
                                                        [](const fs::path& source) {
                                                          return source.extension() == ".s";
                                                        });
  if (job.language == Language::assembly &&
      (job.kind == JobKind::rocm_code_object || plain_assembly)) {
    return false;
  }
  switch (job.kind) {
    case JobKind::object:
    case JobKind::shared:
    case JobKind::executable:
    case JobKind::llvm_ir:
    case JobKind::rocm_code_object:
    case JobKind::wasm:
      return true;
    default:
      return false;
  }
}

}  // namespace

// Asks the compile step (the recipe's first tool step) for its dependency output, which
// DirectCache records: the headers as the compiler resolved them, -I, -iquote, -isystem,
// -include and CPATH alike.
void ask_for_dependencies(const Job& job, const Workspace& workspace, JobRecipe& prepared) {
  if (!compiles_c_source(job)) return;
  for (RecipeStep& step : prepared.recipe.steps) {
    auto* tool = std::get_if<ToolStep>(&step);
    if (tool == nullptr) continue;
    prepared.depfile = workspace.work_dir / "kiln-deps.d";
    tool->run.argv.insert(tool->run.argv.end(), {"-MD", "-MF", prepared.depfile.string()});
    prepared.depfile_cwd = tool->run.cwd.empty() ? fs::current_path() : fs::absolute(tool->run.cwd);
    return;
  }
}

}  // namespace kiln::build::detail
