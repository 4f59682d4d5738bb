// libFuzzer target: what compiling a CUDA module in parts reads (toolchains/cuda/kernel_split.h,
// ptx_merge.h) on arbitrary text. The input is a CUDA source, and also (split at NUL bytes) the
// PTX modules of its parts. kernel_definitions() finds two or more kernels in order, each from a
// word to its closing brace, or none; with_kernels_only() keeps every line; merged_ptx() merges
// or refuses. Anything else, or any exception, is a bug.
//
//   cd build/fuzz/fuzz && ./cuda_split_fuzz -max_total_time=600 corpus/cuda_split
//       ../../../fuzz/corpus/cuda_split
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "toolchains/cuda/kernel_split.h"
#include "toolchains/cuda/ptx_merge.h"

namespace {

using kiln::cuda::internal::KernelSpan;

void check_kernels(std::string_view code) {
  auto kernels = kiln::cuda::internal::kernel_definitions(code);
  if (!kernels) return;
  if (kernels->size() < 2) std::abort();
  size_t after = 0;
  for (const KernelSpan& kernel : *kernels) {
    if (kernel.begin < after || kernel.end <= kernel.begin || kernel.end > code.size() ||
        code[kernel.end - 1] != '}') {
      std::abort();
    }
    after = kernel.end;
  }
  std::vector<size_t> first = {0};
  std::string part = kiln::cuda::internal::with_kernels_only(code, *kernels, first);
  if (std::count(part.begin(), part.end(), '\n') != std::count(code.begin(), code.end(), '\n')) {
    std::abort();
  }
  auto groups = kiln::cuda::internal::balanced_groups(*kernels, 1 + code.size() % 4);
  size_t placed = 0;
  for (const auto& group : groups) placed += group.size();
  if (placed != kernels->size()) std::abort();
}

void check_merge(std::string_view text) {
  std::vector<std::string> modules;
  for (size_t begin = 0; begin <= text.size();) {
    size_t end = std::min(text.find('\0', begin), text.size());
    modules.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  auto merged = kiln::cuda::internal::merged_ptx(modules);
  if (merged && merged->empty()) std::abort();
  (void)kiln::cuda::internal::ptx_compiler_release(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_kernels(text);
  check_merge(text);
  return 0;
}
