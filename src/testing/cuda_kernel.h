// The CUDA kernel the tests and the CUDA benchmark compile: half, bfloat16, int64_t, INFINITY and
// inline asm, what the seed's NVRTC preamble exists for.
#pragma once

#include <optional>
#include <string>

#include "kiln/cuda.h"
#include "kiln/error.h"

namespace kiln::testing {

// Why CUDA tests cannot run here (no toolkit), for GTEST_SKIP; std::nullopt when they can.
inline std::optional<std::string> cuda_toolkit_missing() {
  try {
    (void)cuda::find_cuda_path();
    return std::nullopt;
  } catch (const Error& e) {
    return std::string("needs the CUDA toolkit: ") + e.what();
  }
}

inline constexpr const char* kPreambleKernel = R"(#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void kiln_test(half* h, __nv_bfloat16* b, int64_t* n, float* f) {
  int i = threadIdx.x;
  h[i] = h[i] * h[i] + h[i];
  b[i] = b[i] * b[i];
  unsigned lane;
  __asm__ __volatile__("mov.u32 %0, %%laneid;" : "=r"(lane));
  n[i] += static_cast<int64_t>(lane);
  f[i] = f[i] > 1.0f ? INFINITY : f[i] / f[i + 1];
}
)";

}  // namespace kiln::testing
