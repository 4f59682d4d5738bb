// perform(): a recipe's steps, in order (kiln/recipe.h).
#include "kiln/recipe.h"

#include "internal/files.h"
#include "kiln/error.h"
#include "target_libc.h"

namespace kiln {
namespace {

// kiln::check(), with kiln's notes added to the output of a failure: the step's own, and one
// naming a missing target C library when the linker says so.
RunResult run_step(const ToolStep& step) {
  try {
    return check(step.label, step.run);
  } catch (const ToolFailed& e) {
    ToolFailure failure = e.failure();
    std::string& output = failure.output;
    bool noted = false;
    for (const std::string& note :
         {step.failure_note, internal::missing_target_libc_note(output, step.run.argv)}) {
      if (note.empty()) continue;
      if (!output.empty() && !output.ends_with('\n')) output += '\n';
      output += note;
      noted = true;
    }
    if (!noted) throw;
    throw ToolFailed(std::move(failure));
  }
}

}  // namespace

const RecipeTool* Recipe::tool(std::string_view program) const {
  for (const RecipeTool& t : tools) {
    if (t.program == program) return &t;
  }
  return nullptr;
}

RunResult perform(const Recipe& recipe) {
  RunResult last;
  for (const RecipeStep& step : recipe.steps) {
    if (const auto* tool_step = std::get_if<ToolStep>(&step)) {
      last = run_step(*tool_step);
    } else {
      std::get<CallStep>(step).call();
    }
  }
  return last;
}

}  // namespace kiln
