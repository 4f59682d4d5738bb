// One kernel cache for kiln build and compile_cuda: a kernel compile_cuda (kiln::cuda::compile,
// here in the test's own process) compiled is a cache hit for a `kiln build` job of the same
// source, arch, format and options, and the other way round, with nvcc and with NVRTC; a changed
// option is a miss both ways. The job is a kernel file with a header beside it, or inline code
// (as TVM's kernels, which name no file).
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_project.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "testing/cuda_kernel.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ScopedEnv;

constexpr const char* kKernel =
    "#include \"scale.h\"\n"
    "extern \"C\" __global__ void kiln_shared(float* y, const float* x, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = SCALE * x[i] + y[i];\n"
    "}\n";
// The same without a header, for inline code (which has no directory of its own).
constexpr const char* kInlineKernel =
    "#ifndef SCALE\n#define SCALE 2.0f\n#endif\n"
    "extern \"C\" __global__ void kiln_shared(float* y, const float* x, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = SCALE * x[i] + y[i];\n"
    "}\n";

struct Case {
  cuda::Backend backend;
  bool inline_code;
};

class SharedKernelCache : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (auto why = testing::cuda_toolkit_missing()) GTEST_SKIP() << *why;
    if (GetParam().backend == cuda::Backend::nvrtc) {
      try {
        (void)cuda::nvrtc_version();
      } catch (const Error& e) {
        GTEST_SKIP() << "needs NVRTC: " << e.what();
      }
    } else if (!fs::exists(cuda::find_cuda_path() / "bin" / "nvcc")) {
      GTEST_SKIP() << "needs nvcc in " << cuda::find_cuda_path();
    }
    project_.write("scale.h", "#ifndef SCALE\n#define SCALE 2.0f\n#endif\n");
    project_.write("k.cu", kKernel);
    testing::wait_for_coarse_clock_past(project_.path("k.cu"));
  }

  std::string code() const { return GetParam().inline_code ? kInlineKernel : kKernel; }
  // What compile_cuda is given for the job's kernel: its file when it has one.
  cuda::CompileOptions options(std::vector<std::string> extra = {}) const {
    return {.format = cuda::Format::cubin,
            .arch = "sm_80",
            .options = std::move(extra),
            .source_path = GetParam().inline_code ? fs::path() : project_.path("k.cu"),
            .backend = GetParam().backend};
  }
  // Builds the manifest's one job "k" (with `extra` options); returns its report.
  json build(const std::vector<std::string>& extra = {}) const {
    json job = {{"name", "k"},
                {"kind", "cuda"},
                {"arch", "sm_80"},
                {"format", "cubin"},
                {"backend", cuda::backend_name(GetParam().backend)},
                {"options", extra}};
    if (GetParam().inline_code) {
      job["code"] = code();
    } else {
      job["sources"] = {"k.cu"};
    }
    project_.manifest({{"jobs", {job}}});
    RunResult r = project_.build();
    EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
    return project_.jobs().at("k");
  }

  testing::BuildProject project_;
  // compile_cuda's cache is kiln build's: the same directory, and the same base directory (kiln
  // build's is the manifest's directory), so that the paths in a key are the same words.
  ScopedEnv on_{"KILN_NO_CACHE", std::nullopt};
  ScopedEnv where_{"KILN_CACHE_DIR", project_.path("cache").string()};
  ScopedEnv base_{"KILN_BASE_DIR", project_.dir().string()};
};

TEST_P(SharedKernelCache, WhatCompileCudaCompiledIsAHitForKilnBuild) {
  cuda::CompileResult compiled = cuda::compile(code(), options());
  ASSERT_FALSE(compiled.cached) << "a fresh cache held the kernel";
  json job = build();
  ASSERT_EQ(job["status"], "cached") << job.dump(2);
  EXPECT_EQ(job["cached"], true);
  EXPECT_EQ(testing::read_file(job["output"].get<std::string>()), compiled.bytes);

  json changed = build({"-DSCALE=3.0f"});
  EXPECT_EQ(changed["status"], "done") << "another option, the same key: " << changed.dump(2);
  EXPECT_EQ(changed["cached"], false);
  EXPECT_NE(testing::read_file(changed["output"].get<std::string>()), compiled.bytes);
}

TEST_P(SharedKernelCache, WhatKilnBuildCompiledIsAHitForCompileCuda) {
  json job = build();
  ASSERT_EQ(job["status"], "done") << job.dump(2);
  cuda::CompileResult compiled = cuda::compile(code(), options());
  EXPECT_TRUE(compiled.cached) << "compile_cuda compiled what kiln build had stored";
  EXPECT_EQ(compiled.bytes, testing::read_file(job["output"].get<std::string>()));

  cuda::CompileResult changed = cuda::compile(code(), options({"-DSCALE=3.0f"}));
  EXPECT_FALSE(changed.cached) << "another option, the same key";
  EXPECT_NE(changed.bytes, compiled.bytes);
}

INSTANTIATE_TEST_SUITE_P(Kernels, SharedKernelCache,
                         ::testing::Values(Case{cuda::Backend::nvrtc, false},
                                           Case{cuda::Backend::nvrtc, true},
                                           Case{cuda::Backend::nvcc, false},
                                           Case{cuda::Backend::nvcc, true}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(cuda::backend_name(info.param.backend)) +
                                  (info.param.inline_code ? "_inline" : "_file");
                         });

}  // namespace
}  // namespace kiln
