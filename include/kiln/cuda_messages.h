// What a front end (kiln's command line, kiln build) tells a person about a CUDA compile. The
// library's own errors keep the seed's text for tvm.support's callers: a failed compile's
// message starts with the whole source. A front end retells them here: briefly, naming the
// user's file.
//
//   try {
//     kiln::cuda::compile(code, {.arch = "sm_80", .source_path = "k.cu"});
//   } catch (const kiln::ToolFailed& e) {
//     throw kiln::cuda::brief_failure(e);
//     // "NVRTC compilation failed:\nk.cu(3): error: expected an expression\n...
//     //  Command line: nvrtc ..."
//   }
#pragma once

#include <string>
#include <string_view>

#include "kiln/error.h"

namespace kiln::cuda {

// `failure`, a ToolFailed that cuda::compile() or compile_cuda() threw (whose label is the
// source, as the seed's message starts with it), without the source: a ToolFailed whose label
// is the first line of the compiler's output ("Compilation error:", "NVRTC compilation
// failed:"), then the compiler's messages, which name the user's file and lines, its status and
// the command line.
ToolFailed brief_failure(const ToolFailed& failure);

}  // namespace kiln::cuda
