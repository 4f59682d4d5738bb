// The source NVRTC compiles: the kernel with host-only includes dropped and the seed's preamble
// (fixed-width integers from cuda/std/cstdint, the __asm__/__volatile__ spellings, INFINITY, a
// CUtensorMap declaration when the kernel mentions it, std:: type traits for NVSHMEM).
#pragma once

#include <string>
#include <string_view>

namespace kiln::cuda::internal {

// The seed's layout: every preamble line, then the kernel. Kept as the reference that kiln's
// layout is tested and benchmarked against.
std::string seed_nvrtc_source(std::string_view code, bool nvshmem);

// kiln's layout: the same declarations, but the kernel's leading block of preprocessor lines
// (its #includes) comes right after the preamble's #include and macros, before the preamble's
// using-declarations. The #includes then form one prefix that NVRTC's automatic precompiled
// header (-pch) covers, so a warm compile stops re-parsing cuda_fp16.h and friends. Nothing
// changes meaning: under NVRTC, cuda/std/cstdint already declares the fixed-width types at global
// scope, and the macros still precede every header.
std::string nvrtc_source(std::string_view code, bool nvshmem);

}  // namespace kiln::cuda::internal
