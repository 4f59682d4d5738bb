#include <cuda_fp16.h>
#define UNARY(NAME, F) \
  static inline __device__ half NAME(half x) { \
    return __float2half(F(__half2float(x)));   \
  }
UNARY(hexp, expf)
struct __align__(8) pair { half a; half b; };
__device__ half max(half a, half b) { return __hgt(a, b) ? a : b; }
extern "C" __global__ void __launch_bounds__(64) first(half* x);
extern "C" __global__ void second(float* y);
extern "C" __global__ void third(int* z);
extern "C" __global__ void __launch_bounds__(64) first(half* x) {
  // a comment with a brace {
  x[threadIdx.x] = hexp(max(x[0], x[1]));
}

extern "C" __global__ void second(float* y) {
#pragma unroll
  for (int i = 0; i < 4; ++i) y[i] = i;
  const char* text = "} not a brace";
  char c = '}';
  /* nor { this */
}
// between kernels
extern "C" __global__ void third(int* z) { z[0] = 1'000; }
