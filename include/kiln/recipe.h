// A recipe: how one output is made, decided before anything runs. The toolchain module that
// knows a kind of output builds its recipe (cc::shared_recipe, rocm::code_object_recipe, ...):
// the tools it resolved, once, and the exact steps that run them; perform() then runs those
// steps and nothing else. Because a cache key can be computed from the same value (its tools'
// identities, its steps, its key material), the tool that runs is the tool in the key.
//
//   kiln::Recipe recipe = kiln::cc::shared_recipe("libadd.so", {"add.c"}, {.options = {"-O2"}});
//   recipe.tools[0].program;                    // "gcc", exactly argv[0] of the step below
//   std::get<kiln::ToolStep>(recipe.steps[0]);  // {"Compilation error:", {gcc -shared ...}}
//   kiln::perform(recipe);                      // runs it: ToolFailed("Compilation error: ...")
//
// A recipe names paths but owns none: the directories its steps write into (a TempDirectory of
// the caller) must outlive perform(). Building a recipe runs no tool; a static library's recipe
// is the one exception that touches files: it unpacks its .tar inputs, because the archiver's
// command names their members.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kiln/process.h"

namespace kiln {

// A tool a recipe runs: a program, or a compiler inside kiln's own process (NVRTC, kiln's tar).
struct RecipeTool {
  // What it is, for messages: "the C/C++ compiler", "ld.lld", "NVRTC".
  std::string what{};
  // Exactly argv[0] of the steps that run it (a name looked up on PATH, or a path), or the
  // compiler's place after a launcher's prefix, as the toolchain module wrote it (what a cache key
  // names; ToolIdentities::identify() then runs `executable` there); for an in-process tool, its
  // name and version ("nvrtc 13.0").
  std::string program{};
  // The real file `program` runs (symbolic links resolved); empty until
  // ToolIdentities::identify() (kiln/tool_identities.h) fills it, and for in-process tools.
  std::filesystem::path path{};
  // Where `program` was found, absolute, as run() finds it with its step's PATH and working
  // directory (kiln::program_path); identify() also puts it in place of `program` in the steps,
  // so that what runs is what was identified, whatever PATH or the working directory hold later.
  // Empty until then, and for in-process tools.
  std::filesystem::path executable{};
  // Who the tool is: real path, size, modification time and the first line of `--version`
  // (ToolIdentities); an in-process tool's is set by the module ("nvrtc 13.0").
  std::string identity{};
  bool in_process = false;
};

// A step that runs a tool: kiln::check(label, run), so a failure is the seed's ToolFailed.
struct ToolStep {
  std::string label{};
  RunOptions run{};
  // Appended to the tool's output in the ToolFailed of a failure ("" for none): why the module
  // chose this command (create_executable's mode).
  std::string failure_note{};
};

// A step done in kiln's own process: writing a file, unpacking, an NVRTC compile, a tar.
struct CallStep {
  // What it does, for traces: "nvrtc", "tar", "move into place".
  std::string name{};
  // The in-process tool it uses (a RecipeTool's program), or "" for plain file handling.
  std::string tool{};
  std::function<void()> call{};
};

using RecipeStep = std::variant<ToolStep, CallStep>;

struct Recipe {
  // Every tool the steps use, each once, in the order a missing one should be reported.
  std::vector<RecipeTool> tools{};
  std::vector<RecipeStep> steps{};
  // The files the steps read (sources, objects, archives), as the steps name them.
  std::vector<std::filesystem::path> inputs{};
  // What else changes the output and is not in the steps: the environment variables its tools
  // read ("CPATH=/x"), the identities of files the tools read on their own (device libraries).
  std::vector<std::string> key_material{};
  // false: performing it does more than make the output (TVM_KERNEL_DUMP writes dump files), so
  // a cached output must not stand in for it.
  bool cacheable = true;

  // The tool whose program is `program`; nullptr when there is none.
  const RecipeTool* tool(std::string_view program) const;
};

// Performs the steps in order, each tool step with kiln::check() under the caller's RunScope.
// Returns the RunResult of the last tool step (a default one when there is none). Throws what
// the first failing step throws; later steps do not run.
RunResult perform(const Recipe& recipe);

}  // namespace kiln
