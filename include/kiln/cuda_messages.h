// What a front end (kiln's command line, kiln build) tells a person about a CUDA compile. The
// library's own errors keep the seed's text for tvm.support's callers: a failed compile's
// message starts with the whole source, and NVRTC's fatbin refusal names tvm.support's
// arguments. A front end retells them here: briefly, naming the user's file, in its own words.
//
//   try {
//     kiln::cuda::compile(code, {.arch = "sm_80", .source_path = "k.cu"});
//   } catch (const kiln::ToolFailed& e) {
//     throw kiln::cuda::brief_failure(e, kiln::cuda::Audience::command_line);
//     // "NVRTC compilation failed:\nk.cu(3): error: expected an expression\n...
//     //  hint: NVRTC compiles device code only ...\nCommand line: nvrtc ..."
//   }
#pragma once

#include <string>
#include <string_view>

#include "kiln/error.h"

namespace kiln::cuda {

// Whom a message speaks to, so that it names what they can change: a command line's options
// (`--backend nvcc`) or a kiln build manifest's keys (`"backend": "nvcc"`).
enum class Audience { command_line, manifest };

// A setting as `audience` writes it: "--format cubin" / "\"format\": \"cubin\"".
std::string setting(Audience audience, std::string_view key, std::string_view value);

// The label of a failed NVRTC compile (the seed's words).
inline constexpr std::string_view kNvrtcFailed = "NVRTC compilation failed:";

// `failure`, a ToolFailed that cuda::compile() or compile_cuda() threw (whose message starts
// with the whole source, as the seed's does), without the source: its message is brief_text()
// of the same fields: the label ("Compilation error:", "NVRTC compilation failed:"), the
// compiler's messages, which name the user's file and lines, its status and the command line.
// When NVRTC failed on host code (shows_host_code), the output ends with
// host_code_hint(audience). Reads the failure's fields; parses no message.
ToolFailed brief_failure(const ToolFailed& failure, Audience audience);

// Whether NVRTC's log says that the source holds host code, which NVRTC cannot compile: a header
// of the C or C++ library or of the system that it cannot open (<stdio.h>, <cstdio>, <vector>,
// <sys/time.h>, ...), a host function of the runtime API that it does not know (cudaMalloc,
// cudaMemcpy, ...), or a kernel launch (<<<...>>>) outside device code.
bool shows_host_code(std::string_view nvrtc_log);

// One line: NVRTC compiles device code only, and nvcc (named as `audience` asks for it)
// compiles host code.
std::string host_code_hint(Audience audience);

// Why NVRTC makes no fatbin, naming the formats it makes and the backend that makes a fatbin as
// `audience` asks for them. (The library's InvalidArgument names tvm.support's arguments.)
std::string nvrtc_fatbin_refusal(Audience audience);

}  // namespace kiln::cuda
