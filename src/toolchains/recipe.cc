// perform(): a recipe's steps, in order (kiln/recipe.h).
#include "kiln/recipe.h"

#include "internal/files.h"
#include "kiln/error.h"

namespace kiln {
namespace {

// kiln::check(), with the step's note added to the output of a failure.
RunResult run_step(const ToolStep& step) {
  try {
    return check(step.label, step.run);
  } catch (const ToolFailed& e) {
    if (step.failure_note.empty()) throw;
    std::string output = e.output();
    if (!output.empty() && !output.ends_with('\n')) output += '\n';
    throw ToolFailed(e.label(), output + step.failure_note, e.command_line(), e.ending(),
                     e.status());
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
