// kiln's NVRTC source layout against the seed's: the same declarations, the kernel's leading
// #include block moved up so that NVRTC's automatic precompiled header covers it.
#include "nvrtc_source.h"

#include <gtest/gtest.h>

namespace kiln::cuda::internal {
namespace {

size_t at(const std::string& text, const std::string& needle) {
  size_t position = text.find(needle);
  EXPECT_NE(position, std::string::npos) << needle << " missing from\n" << text;
  return position;
}

TEST(NvrtcSource, LeadingIncludesComeBeforeTheUsingDeclarations) {
  std::string code =
      "#include <cuda.h>\n"
      "#include <cuda_fp16.h>\n"
      "// a comment\n"
      "#define SQUARE(x) \\\n"
      "  ((x) * (x))\n"
      "\n"
      "extern \"C\" __global__ void k(int64_t* p) { p[0] = SQUARE(p[1]); }\n";
  std::string kiln = nvrtc_source(code, false);
  std::string seed = seed_nvrtc_source(code, false);
  EXPECT_EQ(kiln.find("#include <cuda.h>"), std::string::npos) << "host-only header dropped";
  EXPECT_EQ(seed.find("#include <cuda.h>"), std::string::npos);
  EXPECT_LT(at(kiln, "#include <cuda/std/cstdint>"), at(kiln, "#define __asm__ asm"));
  EXPECT_LT(at(kiln, "#define INFINITY"), at(kiln, "#include <cuda_fp16.h>"));
  EXPECT_LT(at(kiln, "  ((x) * (x))"), at(kiln, "using cuda::std::int64_t;"));
  EXPECT_LT(at(kiln, "using cuda::std::int64_t;"), at(kiln, "extern \"C\""));
  EXPECT_LT(at(seed, "using cuda::std::int64_t;"), at(seed, "#include <cuda_fp16.h>"));
}

TEST(NvrtcSource, NothingMovesIntoOrOutOfAConditional) {
  std::string code =
      "#include <cuda_fp16.h>\n"
      "#ifdef KILN_WIDE\n"
      "#include <cuda_bf16.h>\n"
      "typedef __nv_bfloat16 T;\n"
      "#endif\n"
      "__global__ void k() {}\n";
  std::string kiln = nvrtc_source(code, false);
  EXPECT_LT(at(kiln, "using cuda::std::int64_t;"), at(kiln, "#ifdef KILN_WIDE"))
      << "the block stops before the #if whose body declares something";
  EXPECT_GT(at(kiln, "using cuda::std::int64_t;"), at(kiln, "#include <cuda_fp16.h>"));
}

TEST(NvrtcSource, TensorMapKeepsTheSeedsOrderAndNvshmemGetsItsTraits) {
  std::string code = "#include <cuda/barrier>\n__global__ void k(CUtensorMap m) {}\n";
  std::string kiln = nvrtc_source(code, true);
  EXPECT_LT(at(kiln, "using cuda::std::is_integral;"), at(kiln, "#include <cuda/std/cstdint>"));
  EXPECT_LT(at(kiln, "struct __align__(128) CUtensorMap"), at(kiln, "#include <cuda/barrier>"));
  EXPECT_EQ(nvrtc_source("__global__ void k() {}\n", false).find("CUtensorMap"), std::string::npos);
}

}  // namespace
}  // namespace kiln::cuda::internal
