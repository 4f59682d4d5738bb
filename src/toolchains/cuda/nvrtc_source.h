// The source NVRTC compiles: the kernel with host-only includes dropped and the seed's preamble
// (fixed-width integers from cuda/std/cstdint, the __asm__/__volatile__ spellings, INFINITY, a
// CUtensorMap declaration when the kernel mentions it, std:: type traits for NVSHMEM).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "nvrtc_prefix.h"

namespace kiln::cuda::internal {

// The seed's layout: every preamble line, then the kernel. Kept as the reference that kiln's
// layout is tested and benchmarked against.
std::string seed_nvrtc_source(std::string_view code, bool nvshmem);

// kiln's layout: the preamble's #include, the kernel's #includes that may move up
// (nvrtc_prefix.h), the preamble's macros; then the declarations (using-declarations, NVSHMEM's
// std:: traits, CUtensorMap) and the kernel after `#line 1 "<name>"`, so that NVRTC's messages
// name the kernel's file and lines. The part before the declarations holds only the toolkit's
// headers and macros: a precompiled header made of it is right for every kernel that starts
// with the same text, whatever the kernel's own headers hold.
struct NvrtcSource {
  std::string text;
  // Bytes of `text` before the first declaration; 0 when it holds no header worth precompiling.
  size_t header_prefix = 0;
};
// `cuda_arch`: __CUDA_ARCH__ of the target (800 for sm_80), 0 when unknown; `toolkit_header`:
// which headers are the toolkit's (nvrtc_prefix.h), the only ones that may move up.
NvrtcSource nvrtc_source(std::string_view code, bool nvshmem, int cuda_arch, std::string_view name,
                         const ToolkitHeader& toolkit_header);

}  // namespace kiln::cuda::internal
