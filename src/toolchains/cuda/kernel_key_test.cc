// kernel_cache_key(): the key compile() stores a kernel under, for each backend, and what changes
// it (the compile's own options, not a launcher's place or options NVRTC drops).
#include <gtest/gtest.h>

#include "kiln/cache.h"
#include "kiln/cuda.h"
#include "kiln/direct_cache.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/cuda_kernel.h"
#include "testing/test_support.h"

namespace kiln::cuda {
namespace {

using testing::ScopedEnv;

constexpr const char* kKernel =
    "extern \"C\" __global__ void kiln_key(float* y) { y[threadIdx.x] *= 2.0f; }\n";

class KernelKey : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (auto why = testing::cuda_toolkit_missing()) GTEST_SKIP() << *why;
    if (GetParam() == Backend::nvrtc) {
      try {
        (void)nvrtc_version();
      } catch (const Error& e) {
        GTEST_SKIP() << "needs NVRTC: " << e.what();
      }
    }
  }
  CompileOptions options(std::vector<std::string> extra = {}) const {
    return {.format = Format::cubin,
            .arch = "sm_80",
            .options = std::move(extra),
            .backend = GetParam()};
  }
  TempDirectory dir_;
  ScopedEnv on_{"KILN_NO_CACHE", std::nullopt};
  ScopedEnv where_{"KILN_CACHE_DIR", dir_.path().string()};
};

TEST_P(KernelKey, NamesTheEntryCompileStores) {
  Cache cache = Cache::open();  // as compile() opens it: the same directory and base directory
  std::string key = kernel_cache_key(kKernel, options(), cache);
  EXPECT_FALSE(DirectCache(cache, key, std::vector<std::filesystem::path>{}).get().has_value());
  CompileResult compiled = compile(kKernel, options());
  ASSERT_FALSE(compiled.cached);
  std::optional<std::string> stored =
      DirectCache(cache, key, std::vector<std::filesystem::path>{}).get();
  ASSERT_TRUE(stored.has_value()) << "compile() stored the kernel under another key";
  EXPECT_EQ(*stored, compiled.bytes);
  EXPECT_EQ(kernel_cache_key(kKernel, options(), cache), key) << "the same compile, the same key";
}

TEST_P(KernelKey, ChangesWithWhatTheCompilerGets) {
  Cache cache = Cache::open();
  std::string key = kernel_cache_key(kKernel, options(), cache);
  EXPECT_NE(kernel_cache_key(kKernel, options({"-DKILN_X=1"}), cache), key) << "an option";
  EXPECT_NE(kernel_cache_key(std::string(kKernel) + "// edited\n", options(), cache), key);
  CompileOptions ptx = options();
  ptx.format = Format::ptx;
  EXPECT_NE(kernel_cache_key(kKernel, ptx, cache), key) << "the format";
  CompileOptions other_arch = options();
  other_arch.arch = "sm_90a";
  EXPECT_NE(kernel_cache_key(kKernel, other_arch, cache), key) << "the arch";
  CompileOptions other_backend = options();
  other_backend.backend = GetParam() == Backend::nvcc ? Backend::nvrtc : Backend::nvcc;
  try {
    EXPECT_NE(kernel_cache_key(kKernel, other_backend, cache), key) << "the backend";
  } catch (const Error&) {  // NOLINT(bugprone-empty-catch): the other backend is not installed
  }
  {
    ScopedEnv level("TVM_CUDA_PTXAS_REG_LEVEL", "8");
    EXPECT_NE(kernel_cache_key(kKernel, options(), cache), key) << "TVM_CUDA_PTXAS_REG_LEVEL";
  }
  {
    ScopedEnv search("CPATH", dir_.path().string());
    EXPECT_NE(kernel_cache_key(kKernel, options(), cache), key) << "the toolchain's environment";
  }
}

// A launcher changes where nvcc runs, never what it makes; an option NVRTC drops is none.
TEST_P(KernelKey, StaysWithWhatTheCompilerDoesNotGet) {
  Cache cache = Cache::open();
  std::string key = kernel_cache_key(kKernel, options(), cache);
  CompileOptions written = options();
  written.output = dir_.path() / "elsewhere.cubin";
  EXPECT_EQ(kernel_cache_key(kKernel, written, cache), key) << "the output's name";
  if (GetParam() == Backend::nvcc) {
    CompileOptions launched = options();
    launched.launcher = Launcher::ccache();
    EXPECT_EQ(kernel_cache_key(kKernel, launched, cache), key) << "a launcher";
  } else {
    EXPECT_EQ(kernel_cache_key(kKernel, options({"-O3"}), cache), key) << "-O3, which NVRTC drops";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, KernelKey, ::testing::Values(Backend::nvcc, Backend::nvrtc),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return std::string(backend_name(info.param));
                         });

}  // namespace
}  // namespace kiln::cuda
