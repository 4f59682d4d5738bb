// kiln's NVRTC source layout: the toolkit headers the kernel certainly includes move up into
// a prefix of headers and macros that a precompiled header may stand for; the kernel follows
// whole, after #line, so that NVRTC's messages name its file and lines.
#include "nvrtc_source.h"

#include <gtest/gtest.h>

#include "nvrtc_prefix.h"

namespace kiln::cuda::internal {
namespace {

// Every header taken to be the toolkit's: these tests are about the #if logic and the layout.
const ToolkitHeader kAnyHeader = [](std::string_view) { return true; };

size_t at(const std::string& text, const std::string& needle) {
  size_t position = text.find(needle);
  EXPECT_NE(position, std::string::npos) << needle << " missing from\n" << text;
  return position;
}

// The head of a kernel as TVM 0.27 generates it.
constexpr const char* kTvmHead =
    "\n#ifdef __CUDACC_RTC__\n"
    "  #include <cuda/std/cstdint>\n"
    "  using cuda::std::uint8_t;\n"
    "  #include <cuda/std/type_traits>\n"
    "  namespace std {\n    using cuda::std::is_same;\n  }\n"
    "  #ifndef __asm__\n  #define __asm__ asm\n  #endif\n"
    "#else\n"
    "  #include <cstdint>\n  #include <type_traits>\n  #include <cuda.h>\n"
    "#endif\n\n"
    "#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 530)\n"
    "#include <cuda_fp16.h>\n"
    "__device__ half max(half a, half b) { return a; }\n"
    "#endif // __CUDA_ARCH__ >= 530\n"
    "#define CUDA_UNSUPPORTED_HALF_MATH_BINARY(NAME, FP32) \\\n  static inline int NAME;\n"
    "#include <mma.h>\n"
    "extern \"C\" __global__ void k(half* p) { p[0] = p[1]; }\n";

TEST(NvrtcSource, TvmsHeadersMoveIntoThePrefixAndTheKernelKeepsItsLines) {
  NvrtcSource source = nvrtc_source(kTvmHead, false, 800, "/work/k.cu", kAnyHeader);
  std::string prefix = source.text.substr(0, source.header_prefix);
  EXPECT_EQ(hoistable_includes(kTvmHead, 800, kAnyHeader),
            (std::vector<std::string>{"cuda/std/cstdint", "cuda/std/type_traits", "cuda_fp16.h",
                                      "mma.h"}));
  EXPECT_LT(at(prefix, "#include <cuda/std/type_traits>"), at(prefix, "#include <cuda_fp16.h>"));
  EXPECT_LT(at(prefix, "#include <mma.h>"), at(prefix, "#define __asm__ asm"));
  EXPECT_EQ(prefix.find("using"), std::string::npos) << "a declaration would end the PCH";
  EXPECT_EQ(prefix.find("<cuda.h>"), std::string::npos);
  std::string rest = source.text.substr(source.header_prefix);
  EXPECT_LT(at(rest, "using cuda::std::int64_t;"), at(rest, "#line 1 \"/work/k.cu\"\n"));
  std::string body = rest.substr(rest.find("#line 1 \"/work/k.cu\"\n") + 21);
  EXPECT_EQ(body.substr(0, 22), "\n#ifdef __CUDACC_RTC__") << "the kernel, whole, from line 1";
  EXPECT_EQ(body.find("#include <cuda.h>"), std::string::npos) << "host-only header dropped";
  EXPECT_NE(body.find("#else\n  #include <cstdint>\n  #include <type_traits>\n\n#endif\n"),
            std::string::npos)
      << "its line left empty, so that later lines keep their numbers:\n"
      << body;
}

TEST(NvrtcSource, OnlyCertainlyCompiledIncludesOfSelfContainedHeadersMove) {
  // Under an #if NVRTC does not decide, in a branch NVRTC skips, after a configuration macro or
  // another header, or inside braces: the header stays where it is.
  EXPECT_TRUE(
      hoistable_includes("#ifdef KILN_WIDE\n#include <cuda_bf16.h>\n#endif\n", 800, kAnyHeader)
          .empty());
  EXPECT_TRUE(hoistable_includes("#ifndef __CUDACC_RTC__\n#include <cuda_bf16.h>\n#endif\n", 800,
                                 kAnyHeader)
                  .empty());
  EXPECT_TRUE(hoistable_includes("#define __CUDA_NO_HALF_OPERATORS__\n#include <cuda_fp16.h>\n",
                                 800, kAnyHeader)
                  .empty());
  EXPECT_TRUE(
      hoistable_includes("#include \"mine.h\"\n#include <cuda_fp16.h>\n", 800, kAnyHeader).empty());
  EXPECT_TRUE(
      hoistable_includes("namespace a {\n#include <cuda_fp16.h>\n}\n", 800, kAnyHeader).empty());
  EXPECT_TRUE(
      hoistable_includes("#include <stdio.h>\n#include <cuda_fp16.h>\n", 800, kAnyHeader).empty());
  EXPECT_TRUE(hoistable_includes("#if __CUDA_ARCH__ >= 900\n#include <cuda_fp8.h>\n#endif\n", 800,
                                 kAnyHeader)
                  .empty());
  EXPECT_EQ(hoistable_includes("#if __CUDA_ARCH__ >= 900\n#include <cuda_fp8.h>\n#endif\n", 900,
                               kAnyHeader),
            std::vector<std::string>{"cuda_fp8.h"});
  EXPECT_EQ(hoistable_includes("/* { */ // {\nconst char* s = \"{\";\n#include <mma.h>\n", 800,
                               kAnyHeader),
            std::vector<std::string>{"mma.h"});
}

TEST(NvrtcSource, OnlyTheToolkitsHeadersMove) {
  // A user's cuda/x.h stays where the kernel has it, and so does every header after it.
  auto toolkit = [](std::string_view header) { return header != "cuda/x.h"; };
  EXPECT_EQ(hoistable_includes("#include <cuda_fp16.h>\n#include <cuda/x.h>\n#include <mma.h>\n",
                               800, toolkit),
            std::vector<std::string>{"cuda_fp16.h"});
  NvrtcSource source =
      nvrtc_source("#include <cuda/x.h>\n#include <cuda_fp16.h>\n", false, 800, "k.cu", toolkit);
  EXPECT_EQ(source.header_prefix, 0u) << "cuda/std/cstdint alone is not worth a PCH";
  EXPECT_EQ(source.text.find("#include <cuda/x.h>"), source.text.find("#line 1") + 15)
      << "included once, by the kernel:\n"
      << source.text;
}

TEST(NvrtcSource, ConditionsAreDecidedOnlyByWhatNvrtcDefines) {
  EXPECT_EQ(nvrtc_condition("defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 530)", 800), 1);
  EXPECT_EQ(nvrtc_condition("defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 530)", 0), -1);
  EXPECT_EQ(nvrtc_condition("!defined(__CUDACC_RTC__)", 800), 0);
  EXPECT_EQ(nvrtc_condition("__CUDA_ARCH__ < 700 || defined(FOO)", 800), -1);
  EXPECT_EQ(nvrtc_condition("__CUDA_ARCH__ >= 700 || defined(FOO)", 800), 1);
  EXPECT_EQ(nvrtc_condition("__CUDA_ARCH__ < 700 && defined(FOO)", 800), 0);
  EXPECT_EQ(nvrtc_condition("(__CUDACC_VER_MAJOR__ < 12)", 800), -1);
  EXPECT_EQ(nvrtc_condition("__CUDA_ARCH__ >= 530 /* a comment */", 800), -1);
  EXPECT_EQ(nvrtc_condition("__CUDA_ARCH__ >=", 800), -1);
}

TEST(NvrtcSource, TensorMapIsTvmsTagAndTypedefAndNvshmemGetsItsTraits) {
  NvrtcSource source =
      nvrtc_source("#include <cuda/barrier>\n__global__ void k(CUtensorMap m) {}\n", true, 900,
                   "tvm_kernels.cu", kAnyHeader);
  std::string prefix = source.text.substr(0, source.header_prefix);
  EXPECT_LT(at(prefix, "#include <cuda/std/type_traits>"), at(prefix, "#include <cuda/barrier>"));
  EXPECT_LT(at(source.text, "using cuda::std::is_integral;"),
            at(source.text, "struct alignas(64) CUtensorMap_st"));
  EXPECT_LT(at(source.text, "typedef struct CUtensorMap_st CUtensorMap;"),
            at(source.text, "#line 1 \"tvm_kernels.cu\""));
  EXPECT_EQ(nvrtc_source("__global__ void k() {}\n", false, 800, "k.cu", kAnyHeader)
                .text.find("CUtensorMap"),
            std::string::npos);
}

TEST(NvrtcSource, LineNamesAreQuoted) {
  NvrtcSource source =
      nvrtc_source("__global__ void k() {}\n", false, 800, "/a \"b\"\\c\n.cu", kAnyHeader);
  EXPECT_NE(source.text.find("#line 1 \"/a \\\"b\\\"\\\\c\\012.cu\"\n"), std::string::npos)
      << source.text;
}

}  // namespace
}  // namespace kiln::cuda::internal
