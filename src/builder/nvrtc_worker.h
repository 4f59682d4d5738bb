// kiln build's NVRTC compiles that kiln's compile server cannot take go to a pool worker (kiln
// re-executed), so that a crashing NVRTC takes down the worker, never the build. The task's
// failure crosses the process boundary as data: a ToolFailed arrives with every field it had.
//
//   cuda::NvrtcCall elsewhere = nvrtc_in_worker(worker);
//   cuda::compile_recipe(code, options, elsewhere);   // the server first, then `worker`
#pragma once

#include "kiln/cuda.h"
#include "kiln/pool.h"

namespace kiln::build::detail {

// Compiles in `worker` (started on its first call). Throws what the compile threw there: a
// ToolFailed with every field it had there (label, output, command line, ending, status, source,
// source path); a ChildProcessError with the worker's ending when NVRTC killed it; kiln::Error
// when kiln could not start its worker.
cuda::NvrtcCall nvrtc_in_worker(pool::Worker& worker);

}  // namespace kiln::build::detail
