// A module of many kernels compiled in parts at once (nvrtc_parallel.h), with the real NVRTC, its
// compile server (this binary, re-executed) and the toolkit's ptxas: every kernel's machine code
// is the one compile's, and whatever the split could get wrong is compiled whole.
#include "nvrtc_parallel.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <map>

#include <fmt/format.h>

#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/cuda_kernel.h"
#include "testing/test_support.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;
using internal::ptxas_flags_if_splittable;
using testing::ScopedEnv;

// A module shaped as TVM writes one: helpers (one never used: a warning every part repeats),
// every kernel declared, then `kernels` kernels of about `bytes` of straight-line arithmetic each.
// `broken`: that kernel reads an undeclared name.
std::string module_of(int kernels, size_t bytes, int broken = -1) {
  std::string code =
      "#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 530)\n#include <cuda_fp16.h>\n#endif\n"
      "static __device__ float twice(float x) { return 2.0f * x; }\n"
      "static __device__ float unused_helper(float x) { return x; }\n";
  for (int k = 0; k < kernels; ++k) {
    code += fmt::format(
        "extern \"C\" __global__ void k{}(float* __restrict__ out, "
        "const float* __restrict__ in);\n",
        k);
  }
  for (int k = 0; k < kernels; ++k) {
    code += fmt::format(
        "extern \"C\" __global__ void __launch_bounds__(128) k{}(float* __restrict__ "
        "out, const float* __restrict__ in) {{\n",
        k);
    code += "  float a0 = in[threadIdx.x], a1 = a0 + 1.0f, a2 = a0 * 0.5f, a3 = twice(a0);\n";
    size_t begin = code.size();
    for (int j = 0; code.size() - begin < bytes; ++j) {
      code += fmt::format("  a{} = a{} * {}.{}f + in[(threadIdx.x + {}) & 1023];\n", j % 4,
                          (j + 1) % 4, k + 1, j % 97, j * 7 + k);
    }
    if (k == broken) code += "  a0 += not_declared_anywhere;\n";
    code += "  out[threadIdx.x] = a0 + a1 + a2 + a3;\n}\n\n";
  }
  return code;
}

class NvrtcParallel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::cuda_toolkit_missing()) GTEST_SKIP() << *why;
    std::string why;
    if (testing::real_nvrtc_for_test(false, why).empty()) GTEST_SKIP() << why;
    if (::access((find_cuda_path() / "bin" / "ptxas").c_str(), X_OK) != 0) {
      GTEST_SKIP() << "no ptxas in the toolkit: modules are compiled whole";
    }
  }

  CompileResult compile(const std::string& code, CompileOptions options = {}) {
    options.arch = "sm_80";
    options.use_cache = false;
    return cuda::compile(code, options);
  }

  // The module's cubin as `cuobjdump -sass` lists it, by function.
  std::map<std::string, std::string> functions(const std::string& cubin, const char* name) {
    fs::path file = dir_ / name;
    std::ofstream(file, std::ios::binary) << cubin;
    return testing::sass_by_function(testing::sass_listing(file));
  }

  TempDirectory dir_;
  ScopedEnv cache_{"KILN_CACHE_DIR", (dir_ / "cache").string()};  // its compile server's home
  ScopedEnv idle_{"KILN_SERVER_IDLE", "5"};
  // Small kernels, a small threshold: NVVM's time grows faster than a kernel's size.
  ScopedEnv split_{"KILN_NVRTC_SPLIT", "4096"};
  ScopedEnv server_{"KILN_NO_SERVER", std::nullopt};
};

TEST_F(NvrtcParallel, AModuleOfManyKernelsIsCompiledInPartsIntoTheSameMachineCode) {
  std::string code = module_of(6, 3 << 10);
  CompileResult parts = compile(code);
  EXPECT_EQ(parts.programs, 2U);
  ASSERT_EQ(parts.bytes.substr(0, 4),
            "\x7f"
            "ELF");
  CompileResult whole;
  {
    ScopedEnv off("KILN_NVRTC_SPLIT", "0");
    whole = compile(code);
  }
  EXPECT_EQ(whole.programs, 1U);
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(testing::count_occurrences(parts.log, fmt::format("entry function 'k{}'", k)), 1U)
        << "ptxas -v's lines for each kernel:\n"
        << parts.log;
  }
  EXPECT_EQ(testing::count_occurrences(parts.log, "\"unused_helper\" was declared but never"), 1U)
      << "a warning every part repeats is told once:\n"
      << parts.log;
  if (!testing::find_cuobjdump()) GTEST_SKIP() << "no cuobjdump: the machine code is not compared";
  auto split = functions(parts.bytes, "parts.cubin");
  auto single = functions(whole.bytes, "whole.cubin");
  ASSERT_EQ(split.size(), 6U) << testing::sass_listing(dir_ / "parts.cubin");
  for (const auto& [name, sass] : single) {
    EXPECT_EQ(split[name], sass) << name << "'s machine code differs from the one compile's";
  }
}

TEST_F(NvrtcParallel, AModuleThatDoesNotCompileFailsAsItDoesWhole) {
  std::string code = module_of(6, 3 << 10, 2);
  std::string split = testing::error_of([&] { compile(code); });
  ScopedEnv off("KILN_NVRTC_SPLIT", "0");
  std::string whole = testing::error_of([&] { compile(code); });
  EXPECT_NE(whole.find("identifier \"not_declared_anywhere\" is undefined"), std::string::npos)
      << whole;
  EXPECT_EQ(split, whole);
}

TEST_F(NvrtcParallel, WhatTheSplitCouldChangeIsCompiledWhole) {
  std::string code = module_of(6, 3 << 10);
  EXPECT_EQ(compile(code, {.options = {"--maxrregcount=32"}}).programs, 1U)
      << "an option for ptxas that is not passed on";
  EXPECT_EQ(compile(code, {.format = Format::ptx}).programs, 1U) << "PTX is the one compile's";
  {
    ScopedEnv default_threshold("KILN_NVRTC_SPLIT", std::nullopt);
    EXPECT_EQ(compile(code).programs, 1U) << "too small to gain";
  }
  {
    ScopedEnv none("KILN_NO_SERVER", "1");
    EXPECT_EQ(compile(code).programs, 1U) << "NVRTC compiles one program at a time in a process";
  }
  EXPECT_EQ(compile(code, {.options = {"-DUNUSED=1", "-Xptxas", "-O3"}}).programs, 2U);
}

TEST(PtxasFlagsIfSplittable, PassesPtxasItsOptionsAndRefusesWhatItDoesNotKnow) {
  auto flags = ptxas_flags_if_splittable({"--gpu-architecture=compute_80", "-default-device",
                                          "-I/usr/local/cuda/include", "-I", "/opt/include",
                                          "-DX=1", "--use_fast_math", "--ptxas-options=-v",
                                          "-Xptxas", "--warn-on-spills", "-D", "Y"});
  ASSERT_TRUE(flags.has_value());
  EXPECT_EQ(*flags, (std::vector<std::string>{"-v", "--warn-on-spills"}));
  for (const char* option : {"-G", "-lineinfo", "--maxrregcount=32", "-rdc=true", "--fmad=false",
                             "-dlto", "--ftz=true", "--device-debug"}) {
    EXPECT_FALSE(ptxas_flags_if_splittable({"-default-device", option}).has_value()) << option;
  }
  EXPECT_FALSE(ptxas_flags_if_splittable({"-Xptxas"}).has_value()) << "a flag without its value";
}

}  // namespace
}  // namespace kiln::cuda
