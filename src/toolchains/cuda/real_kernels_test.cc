// CUDA code as real projects write it: headers beside the kernel's file, TMA kernels that include
// <cuda/barrier>, TVM's own kernel head. Real NVRTC and nvcc.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"
#include "toolchains/cuda/backends.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

bool have_cuda() {
  try {
    (void)nvrtc_version();
    return fs::exists(find_cuda_path() / "bin" / "nvcc");
  } catch (const Error&) {
    return false;
  }
}

// Runs the test body from another working directory, as a build tool would.
class ElsewhereDir {
 public:
  explicit ElsewhereDir(const fs::path& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~ElsewhereDir() { fs::current_path(old_); }
  ElsewhereDir(const ElsewhereDir&) = delete;
  ElsewhereDir& operator=(const ElsewhereDir&) = delete;

 private:
  fs::path old_;
};

TEST(RealKernels, QuotedIncludesAreFoundBesideTheKernelsFileWithBothBackends) {
  if (!have_cuda()) GTEST_SKIP() << "needs the CUDA toolkit and NVRTC";
  TempDirectory project;
  TempDirectory elsewhere;
  fs::path kernel = project.path() / "src" / "k.cu";
  write(project.path() / "src" / "common" / "value.cuh", "#define KILN_VALUE 4242\n");
  std::string code =
      "#include \"common/value.cuh\"\n"
      "extern \"C\" __global__ void k(int* out) { out[0] = KILN_VALUE; }\n";
  write(kernel, code);
  ElsewhereDir cwd(elsewhere.path());
  for (Backend backend : {Backend::nvrtc, Backend::nvcc}) {
    SCOPED_TRACE(std::string(backend_name(backend)));
    std::string ptx = compile_cuda(code, {.format = Format::ptx,
                                          .arch = "sm_80",
                                          .source_path = kernel,
                                          .backend = backend,
                                          .use_cache = false});
    EXPECT_NE(ptx.find("4242"), std::string::npos) << ptx;
  }
}

TEST(RealKernels, NvrtcErrorsNameTheKernelsFileAndLine) {
  if (!have_cuda()) GTEST_SKIP() << "needs the CUDA toolkit and NVRTC";
  TempDirectory project;
  fs::path kernel = project.path() / "k.cu";
  std::string code =
      "#include <cuda_fp16.h>\n"
      "// the error is on line 4\n"
      "extern \"C\" __global__ void k(half* out) {\n"
      "  out[0] = undeclared_name;\n"
      "}\n";
  std::string message = testing::error_of(
      [&] { compile_cuda(code, {.arch = "sm_80", .source_path = kernel, .use_cache = false}); });
  EXPECT_NE(message.find(kernel.string() + "(4): error"), std::string::npos) << message;
  EXPECT_EQ(message.find("PCH"), std::string::npos) << message;
}

// CUDA 13's <cuda/barrier> declares CUtensorMap_st and its typedef: the preamble must agree with
// it (TVM 0.27's definition), and a TMA kernel takes the map by value.
TEST(RealKernels, TmaKernelsThatIncludeCudaBarrierCompileWithBothBackends) {
  if (!have_cuda()) GTEST_SKIP() << "needs the CUDA toolkit and NVRTC";
  std::string code =
      "#ifndef __CUDACC_RTC__\n"
      "#include <cuda.h>\n"
      "#endif\n"
      "#include <cuda/barrier>\n"
      "extern \"C\" __global__ void tma(const __grid_constant__ CUtensorMap map, int* out) {\n"
      "  __shared__ cuda::barrier<cuda::thread_scope_block> bar;\n"
      "  if (threadIdx.x == 0) init(&bar, blockDim.x);\n"
      "  __syncthreads();\n"
      "  asm volatile(\"prefetch.tensormap [%0];\" :: \"l\"(&map) : \"memory\");\n"
      "  bar.arrive_and_wait();\n"
      "  out[threadIdx.x] = threadIdx.x;\n"
      "}\n";
  for (Backend backend : {Backend::nvrtc, Backend::nvcc}) {
    SCOPED_TRACE(std::string(backend_name(backend)));
    std::string cubin = compile_cuda(
        code, {.format = Format::cubin, .arch = "sm_90a", .backend = backend, .use_cache = false});
    EXPECT_NE(cubin.find("tma"), std::string::npos) << "the kernel's symbol is in the cubin";
  }
}

// The kernel cache asks the compiler which headers it read (nvcc -MD, 0.1-0.3 s; for NVRTC, an
// nvcc -M run) only when a header outside the toolkit may be read; TVM's kernels read none.
TEST(RealKernels, OnlyHeadersOutsideTheToolkitNeedTheCompilersDependencyOutput) {
  if (!have_cuda()) GTEST_SKIP() << "needs the CUDA toolkit and NVRTC";
  TempDirectory mine;
  write(mine.path() / "mine.h", "#define MINE 1\n");
  write(mine.path() / "cuda_fp16.h", "#define SHADOW 1\n");
  std::string user_dir = "-I" + mine.path().string();
  using internal::reads_outside_toolkit;
  EXPECT_FALSE(reads_outside_toolkit("#include <cuda_fp16.h>\n#include <cuda/std/cstdint>\n", {}));
  EXPECT_FALSE(reads_outside_toolkit("#include <mma.h>\n", {user_dir}))
      << "a user's include directory that holds none of the kernel's headers";
  EXPECT_TRUE(reads_outside_toolkit("#include \"mine.h\"\n", {}));
  EXPECT_TRUE(reads_outside_toolkit("#include <mine.h>\n", {user_dir}));
  EXPECT_TRUE(reads_outside_toolkit("#include <cuda_fp16.h>\n", {user_dir})) << "shadowed";
  EXPECT_TRUE(reads_outside_toolkit("#include <zlib_of_nobody.h>\n", {}));
  EXPECT_TRUE(reads_outside_toolkit("", {"-include", (mine.path() / "mine.h").string()}));
  // TVM's head: the host branch (never compiled by NVRTC, compiled by nvcc) includes libstdc++.
  std::string tvm_head =
      "#ifdef __CUDACC_RTC__\n#include <cuda/std/cstdint>\n#else\n#include <cstdint>\n#endif\n"
      "#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 530)\n#include <cuda_fp16.h>\n#endif\n";
  EXPECT_FALSE(reads_outside_toolkit(tvm_head, {}, /*nvrtc=*/true));
  EXPECT_TRUE(reads_outside_toolkit(tvm_head, {}, /*nvrtc=*/false));
  EXPECT_TRUE(reads_outside_toolkit("#ifdef MAYBE\n#include \"mine.h\"\n#endif\n", {}, true));
}

}  // namespace
}  // namespace kiln::cuda
