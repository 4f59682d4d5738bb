// The dependency output of a kiln build job's compile: -MD -MF asked of the compiler, so that
// DirectCache (kiln/direct_cache.h) keys the headers as the compiler resolved them (-I, -iquote,
// -isystem, -include and CPATH alike) instead of kiln guessing them.
//
//   JobRecipe prepared = ...;                          // its tools identified
//   ask_for_dependencies(job, workspace, prepared);    // the compile step now ends "-MD -MF <d>"
//   if (!prepared.depfile.empty()) { /* read it after the compile, from prepared.depfile_cwd */ }
#pragma once

#include "kiln/manifest.h"
#include "recipe.h"

namespace kiln::build::detail {

// Asks the compile step (the recipe's first tool step) of a job that runs a C-family compiler
// over a source for its dependency output: sets prepared.depfile (kiln-deps.d in the work
// directory) and prepared.depfile_cwd. Leaves other jobs (links, tar, NVRTC, LLVM IR, assembly
// that is not preprocessed) as they are.
void ask_for_dependencies(const Job& job, const Workspace& workspace, JobRecipe& prepared);

}  // namespace kiln::build::detail
