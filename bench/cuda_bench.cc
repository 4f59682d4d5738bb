// CUDA compiles against baselines measured in the same run (issue 5). Prints every figure:
//   1. a warm in-process NVRTC cubin compile of the test kernel: kiln vs the seed's exact
//      preamble and options driven through the same NVRTC
//   2. the nvcc backend vs the NVRTC backend for the same kernel (reported, no goal)
//   3. a kernel-cache hit vs a warm NVRTC compile
//   4. 16 different kernels through the process pool (2 workers) vs one after another
//
//   build/release/bench/cuda_bench
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "kiln/cache.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln/temp_directory.h"
#include "testing/cuda_kernel.h"
#include "toolchains/cuda/backends.h"
#include "toolchains/cuda/nvrtc_source.h"

namespace {

using kiln::bench::median;
using kiln::bench::time_us;
namespace cuda = kiln::cuda;

constexpr const char* kKernel = kiln::testing::kPreambleKernel;

// Kernel number `k`: different source, same shape.
std::string variant(int k) {
  std::string code = kKernel;
  code += "extern \"C\" __global__ void scale_" + std::to_string(k) +
          "(float* a) { a[threadIdx.x] *= " + std::to_string(k + 2) + ".0f; }\n";
  return code;
}

KILN_TASK(compile_cubin, [](const kiln::Value& code) -> kiln::Value {
  std::string bytes =
      cuda::compile_cuda(code.get<std::string>(),
                         {.format = cuda::Format::cubin, .arch = "sm_80", .use_cache = false});
  return kiln::Value::binary(std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
});

void figure(const char* what, double value, const char* unit, const char* goal, bool met) {
  std::printf("  %-58s %10.3f %-2s %s%s\n", what, value, unit, goal,
              *goal == '\0' ? "" : (met ? ": met" : ": NOT met"));
}

}  // namespace

int main(int argc, char** argv) {
  kiln::pool::serve_if_worker(argc, argv);
  try {
    cuda::find_cuda_path();
    cuda::nvrtc_version();
  } catch (const kiln::Error& e) {
    std::printf("cuda_bench: skipped, no CUDA toolkit with NVRTC here: %s\n", e.what());
    return 0;
  }
  std::printf("cuda_bench (medians; each against a baseline measured in this run)\n");
  const cuda::CompileOptions nvrtc_cubin{
      .format = cuda::Format::cubin, .arch = "sm_80", .use_cache = false};

  // 1. kiln vs the seed's preamble and options, through the same NVRTC, interleaved.
  namespace in = cuda::internal;
  in::Request request{kKernel, cuda::Format::cubin, "sm_80", {}, false, nullptr};
  std::string arch = in::spelled_arch(request);
  std::vector<std::string> seed_options;
  for (const std::string& option : in::nvrtc_options(request, arch)) {
    if (option != "-pch") seed_options.push_back(option);
  }
  std::string seed_source = in::seed_nvrtc_source(kKernel, false);
  std::vector<double> kiln_us, seed_us;
  cuda::compile_cuda(kKernel, nvrtc_cubin);  // warm: NVRTC loaded, precompiled header made
  in::run_nvrtc(kKernel, seed_source, seed_options, true);
  for (int i = 0; i < 15; ++i) {
    kiln_us.push_back(time_us([&] { cuda::compile_cuda(kKernel, nvrtc_cubin); }));
    seed_us.push_back(time_us([&] { in::run_nvrtc(kKernel, seed_source, seed_options, true); }));
  }
  double preamble = median(kiln_us) / median(seed_us);
  std::printf("  warm NVRTC cubin: kiln %.1f ms, the seed's preamble and options %.1f ms\n",
              median(kiln_us) / 1000, median(seed_us) / 1000);
  figure("1. warm NVRTC compile, kiln / seed", preamble, "x", "goal <= 0.6", preamble <= 0.6);

  // 2. nvcc vs NVRTC.
  std::vector<double> nvcc_us;
  for (int i = 0; i < 5; ++i) {
    nvcc_us.push_back(time_us([&] {
      cuda::compile_cuda(kKernel, {.format = cuda::Format::cubin,
                                   .arch = "sm_80",
                                   .backend = cuda::Backend::nvcc,
                                   .use_cache = false});
    }));
  }
  double backends = median(nvcc_us) / median(kiln_us);
  std::printf("  nvcc cubin %.1f ms, NVRTC cubin %.1f ms\n", median(nvcc_us) / 1000,
              median(kiln_us) / 1000);
  figure("2. nvcc backend / NVRTC backend", backends, "x", "", true);

  // 3. A cache hit (key computed, entry read and its hash checked) vs a warm compile.
  kiln::TempDirectory dir;
  ::setenv("KILN_CACHE_DIR", dir.path().c_str(), 1);
  ::unsetenv("KILN_NO_CACHE");
  const cuda::CompileOptions cached{.format = cuda::Format::cubin, .arch = "sm_80"};
  cuda::compile_cuda(kKernel, cached);  // stores the entry
  std::vector<double> hit_us;
  for (int i = 0; i < 200; ++i)
    hit_us.push_back(time_us([&] { cuda::compile_cuda(kKernel, cached); }));
  double hit = median(kiln_us) / median(hit_us);
  std::printf("  cache hit %.1f us, warm NVRTC compile %.1f us\n", median(hit_us), median(kiln_us));
  figure("3. cache hit speed-up over a warm compile", hit, "x", "goal >= 100", hit >= 100);

  // 4. 16 different kernels: a pool of 2 workers vs one after another in this process.
  std::vector<kiln::Value> sources;
  for (int k = 0; k < 16; ++k) sources.emplace_back(variant(k));
  kiln::pool::Executor pool(
      {.workers = 2,
       .timeout = std::chrono::seconds(120),
       .worker = {.initializer = "compile_cubin", .initializer_args = variant(100)}});
  pool.map_with_error_catching("compile_cubin", {variant(101), variant(102)});  // both warm
  double one_by_one = time_us([&] {
    for (const kiln::Value& code : sources)
      cuda::compile_cuda(code.get<std::string>(), nvrtc_cubin);
  });
  double pooled = time_us([&] {
    for (const kiln::pool::MapResult& r : pool.map_with_error_catching("compile_cubin", sources)) {
      if (r.status != kiln::pool::StatusKind::COMPLETE)
        std::printf("  failed: %s\n", r.value.dump().c_str());
    }
  });
  double speedup = one_by_one / pooled;
  std::printf("  16 kernels: one after another %.1f ms, pool of 2 workers %.1f ms\n",
              one_by_one / 1000, pooled / 1000);
  figure("4. pool of 2 / one after another (speed-up)", speedup, "x", "goal >= 1.7",
         speedup >= 1.7);
  return 0;
}
