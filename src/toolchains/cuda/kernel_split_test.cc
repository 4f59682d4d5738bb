#include "kernel_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace kiln::cuda::internal {
namespace {

// A module as TVM writes one: helpers (with a macro whose body has braces over continued lines,
// a type, a device function), every kernel declared, then the kernels, one with a #pragma and
// braces in a string, a character and comments.
constexpr const char* kModule = R"(#include <cuda_fp16.h>
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
)";

std::string text_of(std::string_view code, const KernelSpan& span) {
  return std::string(code.substr(span.begin, span.size()));
}

TEST(KernelDefinitions, FindsEachKernelOfAModuleAsTvmWritesIt) {
  auto kernels = kernel_definitions(kModule);
  ASSERT_TRUE(kernels.has_value());
  ASSERT_EQ(kernels->size(), 3U);
  EXPECT_TRUE(text_of(kModule, (*kernels)[0])
                  .starts_with("extern \"C\" __global__ void "
                               "__launch_bounds__(64) first(half* x) {"));
  EXPECT_TRUE(text_of(kModule, (*kernels)[1]).starts_with("extern \"C\" __global__ void second"));
  EXPECT_EQ(text_of(kModule, (*kernels)[2]),
            "extern \"C\" __global__ void third(int* z) { z[0] = 1'000; }");
  for (const KernelSpan& kernel : *kernels) EXPECT_TRUE(text_of(kModule, kernel).ends_with("}"));
}

TEST(KernelDefinitions, ReadsNothingItCouldSplitWrongly) {
  std::string module = kModule;
  const std::pair<const char*, std::string> cases[] = {
      {"a helper after a kernel", module + "__device__ int late() { return 1; }\n"},
      {"a variable after a kernel", module + "__device__ int counter;\n"},
      {"a directive after a kernel", module + "#if 1\n#endif\n"},
      {"a #pragma between kernels", module + "#pragma once\n"},
      {"a template kernel", module + "template <int N> __global__ void t(int* a) { a[0] = N; }\n"},
      {"kernels in extern \"C\" { }",
       "extern \"C\" {\n__global__ void a() {}\n__global__ void b() {}\n}\n"},
      {"a kernel in a namespace", module + "namespace n { __global__ void c() {} }\n"},
      {"one kernel", "extern \"C\" __global__ void only(int* a) { a[0] = 0; }\n"},
      {"an unclosed comment", module + "/* open"},
      {"an unclosed brace", module + "extern \"C\" __global__ void open() {\n"},
      {"a raw string", module + "const char* r = R\"(})\";\n"},
      {"a stray semicolon after a kernel", module + ";\n"},
      {"text without end", module + "int"},
  };
  for (const auto& [what, code] : cases) {
    EXPECT_FALSE(kernel_definitions(code).has_value()) << what;
  }
}

TEST(Unsplittable, SaysWhatTheCodeUsesThatPartsWouldNotCompileAlike) {
  std::string module = kModule;
  EXPECT_EQ(unsplittable(module), std::nullopt);
  auto with_helper = [&](const std::string& helper) {
    std::string code = module;
    code.insert(code.find("extern \"C\" __global__ void __launch_bounds__(64) first(half* x);"),
                helper);
    return code;
  };
  auto printing = unsplittable(with_helper("__device__ void say() { printf(\"%d\\n\", 1); }\n"));
  ASSERT_TRUE(printing.has_value());
  EXPECT_TRUE(printing->starts_with("printf (NVVM names the strings")) << *printing;
  EXPECT_TRUE(unsplittable(with_helper("__device__ void check(int a) { assert(a); }\n")));
  auto anonymous = unsplittable(with_helper("namespace { __device__ int flag; }\n"));
  ASSERT_TRUE(anonymous.has_value());
  EXPECT_TRUE(anonymous->starts_with("an anonymous namespace")) << *anonymous;
  EXPECT_TRUE(unsplittable(with_helper("namespace /* none */ {\n__device__ int f;\n}\n")));
  for (const char* fine :
       {"namespace kiln { __device__ int flag; }\n", "// printf(\"%d\", 1); namespace {\n",
        "__device__ const char* text = \"assert printf namespace {\";\n",
        "using namespace std;\n"}) {
    EXPECT_EQ(unsplittable(with_helper(fine)), std::nullopt) << fine;
  }
  EXPECT_EQ(unsplittable("extern \"C\" __global__ void only() { printf(\"x\"); }\n"), std::nullopt)
      << "nothing to split";
}

TEST(BalancedGroups, PutsTheLargestKernelFirstInTheLightestGroup) {
  std::vector<KernelSpan> kernels = {{0, 100}, {100, 110}, {110, 170}, {170, 220}};
  auto groups = balanced_groups(kernels, 2);  // 100 + 10 and 60 + 50
  EXPECT_EQ(groups, (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(balanced_groups(kernels, 8).size(), 4U) << "no empty group";
  EXPECT_EQ(balanced_groups(kernels, 1), (std::vector<std::vector<size_t>>{{0, 1, 2, 3}}));
  EXPECT_EQ(balanced_groups(kernels, 2), groups) << "the same input, the same groups";
}

TEST(WithKernelsOnly, KeepsEveryLineThatStaysAtItsNumber) {
  auto kernels = kernel_definitions(kModule);
  ASSERT_TRUE(kernels.has_value());
  std::string part = with_kernels_only(kModule, *kernels, {2});
  std::string_view module = kModule;
  EXPECT_EQ(std::count(part.begin(), part.end(), '\n'),
            std::count(module.begin(), module.end(), '\n'));
  EXPECT_EQ(part.find("y[i] = i"), std::string::npos);
  EXPECT_EQ(part.find("hexp(max("), std::string::npos);
  EXPECT_NE(part.find("extern \"C\" __global__ void second(float* y);"), std::string::npos)
      << "declarations stay";
  size_t line = std::count(module.begin(), module.begin() + module.find("z[0] = 1'000"), '\n');
  size_t kept = std::count(part.begin(), part.begin() + part.find("z[0] = 1'000"), '\n');
  EXPECT_EQ(kept, line);
  auto again = kernel_definitions(with_kernels_only(kModule, *kernels, {0, 1}));
  ASSERT_TRUE(again.has_value()) << "a part is a module too";
  EXPECT_EQ(again->size(), 2U);
}

}  // namespace
}  // namespace kiln::cuda::internal
