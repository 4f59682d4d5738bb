// Which of a kernel's #includes may move to the top of the source NVRTC compiles, so that one
// precompiled header (made once in kiln's compile server, nvrtc_server.h) stands for them.
//
// TVM's kernels include cuda/std/type_traits, cuda_fp16.h and the like inside #ifdef
// __CUDACC_RTC__ or #if __CUDA_ARCH__ >= 530 blocks, after using-declarations: a precompiled
// header covers only the directives before the first declaration, so as written they would be
// parsed again by every compile (type_traits alone is ~0.6 s of NVRTC 13's time). Moving an
// #include up changes nothing when the header is one of the toolkit's self-contained device
// headers, the #include is certainly compiled (every enclosing #if is decided by what NVRTC
// itself defines), and nothing before it could change what the header declares (no
// configuration macro defined, no other header included, not inside braces). A header that is
// not the toolkit's (ToolkitHeader below) stops the moving, as any other #include does.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cuda::internal {

// Whether a header (as written between <>) is the toolkit's own: what NVRTC's search finds for
// it is in one of the toolkit's include directories (IncludeSearch::from_toolkit, nvrtc_pch.h).
// A user's header named like one of the toolkit's (cuda/x.h, found through -I) never moves up:
// a precompiled header made of it would outlive its edits, and one without an include guard
// would be included twice.
using ToolkitHeader = std::function<bool(std::string_view header)>;

// The headers (as written between <>, e.g. "cuda_fp16.h") that may move up, in the kernel's
// order, each once: the toolkit's (`toolkit_header`) self-contained device headers. `cuda_arch`:
// __CUDA_ARCH__ for the target (800 for sm_80); 0 when unknown.
std::vector<std::string> hoistable_includes(std::string_view code, int cuda_arch,
                                            const ToolkitHeader& toolkit_header);

// Every #include NVRTC may compile in `code`, as written between the quotes or brackets
// ("\"mine.h\"", "<cuda_fp16.h>"): those under an #if that NVRTC decides false (TVM's
// `#ifndef __CUDACC_RTC__ #include <cstdint> ...`) are left out.
std::vector<std::string> nvrtc_includes(std::string_view code, int cuda_arch);

// #if's condition, with what NVRTC defines (__CUDACC_RTC__, __CUDACC__, __CUDA_ARCH__ when
// `cuda_arch` is not 0) and nothing else: 1 or 0 when decided, -1 when it depends on anything
// else (a macro the kernel or an option may define) or cannot be read.
int nvrtc_condition(std::string_view expression, int cuda_arch);

}  // namespace kiln::cuda::internal
