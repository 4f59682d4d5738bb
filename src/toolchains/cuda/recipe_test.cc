// cuda::compile_recipe with the real NVRTC: its in-process compile is recorded in the caller's
// RunScope as kiln build reports a tool's run, with the options NVRTC gets as a command line and
// NVRTC's log, whether it succeeds or fails, in this process or through an NvrtcCall.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/recipe.h"
#include "kiln/temp_directory.h"

namespace kiln::cuda {
namespace {

class CudaRecipe : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      nvrtc_version();
    } catch (const Error& e) {
      GTEST_SKIP() << "needs NVRTC: " << e.what();
    }
  }
  // compile_recipe() of `code`, written to k.cu, performed in a RunScope: what the scope recorded.
  std::vector<RunScope::Record> performed(const std::string& code, const NvrtcCall& nvrtc = {}) {
    std::ofstream(dir / "k.cu") << code;
    Recipe recipe = compile_recipe(code,
                                   {.format = Format::cubin,
                                    .arch = "sm_80",
                                    .output = dir / "k.cubin",
                                    .source_path = dir / "k.cu",
                                    .use_cache = false},
                                   nvrtc);
    RunScope scope({});
    try {
      perform(recipe);
    } catch (const ToolFailed& e) {
      failure = e.command_line();
    }
    return scope.runs();
  }
  TempDirectory dir;
  std::string failure;  // the command line of the last ToolFailed
};

TEST_F(CudaRecipe, AnNvrtcCompileIsRecordedWithItsCommandAndLog) {
  const std::string code =
      "extern \"C\" __global__ void k(float* a) {\n  int unused;\n  a[0] *= 2;\n}\n";
  NvrtcCall elsewhere = [](std::string_view code, const CompileOptions& options) {
    EXPECT_TRUE(options.output.empty()) << "the bytes come back; the recipe writes them";
    return compile(code, options);
  };
  for (const NvrtcCall& nvrtc : {NvrtcCall{}, elsewhere}) {
    SCOPED_TRACE(nvrtc ? "through an NvrtcCall" : "in this process");
    std::vector<RunScope::Record> runs = performed(code, nvrtc);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_TRUE(runs[0].in_process);
    EXPECT_EQ(runs[0].ending, Ending::exited(0));
    EXPECT_TRUE(runs[0].command_line.starts_with("nvrtc --gpu-architecture=sm_80 "))
        << runs[0].command_line;
    EXPECT_TRUE(runs[0].command_line.ends_with(fmt::format(" {}", (dir / "k.cu").string())))
        << runs[0].command_line;
    EXPECT_NE(runs[0].output.find("variable \"unused\" was declared but never referenced"),
              std::string::npos)
        << runs[0].output;
    EXPECT_NE(runs[0].output.find("ptxas info"), std::string::npos) << runs[0].output;
    EXPECT_TRUE(std::filesystem::exists(dir / "k.cubin"));
  }
}

// A failing compile is recorded too, and its command holds the options NVRTC really got: those
// the failure names.
TEST_F(CudaRecipe, AFailedNvrtcCompileIsRecordedWithTheOptionsItFailedWith) {
  std::vector<RunScope::Record> runs =
      performed("extern \"C\" __global__ void k(float* a) { int x = ; }\n");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(runs[0].ending.ok());
  ASSERT_FALSE(failure.empty());
  EXPECT_TRUE(runs[0].command_line.starts_with(failure))
      << runs[0].command_line << "\nfailed with: " << failure;
}

}  // namespace
}  // namespace kiln::cuda
