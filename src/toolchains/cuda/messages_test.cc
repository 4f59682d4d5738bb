// kiln/cuda_messages.h with the real nvcc and NVRTC: failures retold briefly, the host-code hint
// on what NVRTC really says about host code, and the refusal of a fatbin in each audience's
// words.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "kiln/cuda.h"
#include "kiln/cuda_messages.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/cuda_kernel.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;

class CudaMessages : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::cuda_toolkit_missing()) GTEST_SKIP() << *why;
  }
  // The ToolFailed a compile of `code` (written to `name` first) throws; fails the test when it
  // compiles.
  ToolFailed failure(const std::string& name, const std::string& code, Backend backend) const {
    std::ofstream(dir / name) << code;
    try {
      compile(code,
              {.arch = "sm_80", .source_path = dir / name, .backend = backend, .use_cache = false});
    } catch (const ToolFailed& e) {
      return e;
    }
    ADD_FAILURE() << name << " compiled with " << backend_name(backend);
    return {"", "", ""};
  }
  TempDirectory dir;
};

size_t lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n') + 1; }

// A kernel with one error, on line 23, below twenty lines that only a message quoting the whole
// source would repeat.
std::string one_error_kernel() {
  std::string code;
  for (int i = 1; i <= 20; ++i) code += "// kiln filler line " + std::to_string(i) + "\n";
  return code + "extern \"C\" __global__ void k(float* a) {\n  a[0] = 1;\n  int x = ;\n}\n";
}

TEST(CudaBriefFailure, ReadsTheFieldsAndParsesNoMessage) {
  // An output whose first line looks like a label: the brief failure keeps the failure's own
  // label and output as they are (the old retelling took the label from the output's first line).
  ToolFailed full(ToolFailure{.label = std::string(kNvrtcFailed),
                              .output = "Compilation error:\nk.cu(2): error: cannot open source "
                                        "file \"stdio.h\"\n",
                              .command_line = "nvrtc k.cu",
                              .status = "NVRTC_ERROR_COMPILATION",
                              .source = "#include <stdio.h>\n__global__ void k() {}\n",
                              .source_path = "k.cu"});
  ToolFailed brief = brief_failure(full, Audience::manifest);
  EXPECT_EQ(brief.label(), kNvrtcFailed);
  EXPECT_TRUE(brief.output().starts_with(full.output())) << brief.output();
  EXPECT_TRUE(brief.output().ends_with(host_code_hint(Audience::manifest))) << brief.output();
  EXPECT_EQ(brief.source(), "");
  EXPECT_EQ(brief.source_path(), "k.cu");
  EXPECT_EQ(brief.status(), full.status());
  EXPECT_EQ(brief.what(), brief_text(brief.failure()));
  EXPECT_EQ(std::string(full.what()).find(full.source()), 0u)
      << "the seed's message starts with it";
}

TEST_F(CudaMessages, TheHeadersExample) {
  std::ofstream(dir / "k.cu") << "__global__ void k() { int x = ; }\n";
  try {
    try {
      compile("__global__ void k() { int x = ; }\n",
              {.arch = "sm_80", .source_path = dir / "k.cu", .use_cache = false});
    } catch (const ToolFailed& e) {
      throw brief_failure(e, Audience::command_line);
    }
    ADD_FAILURE() << "compiled";
  } catch (const ToolFailed& e) {
    EXPECT_EQ(e.label(), "NVRTC compilation failed:");
    EXPECT_NE(e.output().find("error: expected an expression"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Command line: nvrtc "), std::string::npos);
  }
}

TEST_F(CudaMessages, AOneErrorFailureIsBriefWithoutTheSourceBothBackends) {
  for (Backend backend : {Backend::nvrtc, Backend::nvcc}) {
    SCOPED_TRACE(backend_name(backend));
    ToolFailed full = failure("one.cu", one_error_kernel(), backend);
    ASSERT_NE(std::string(full.what()).find("kiln filler line 7"), std::string::npos)
        << "the library's message keeps the seed's source";
    ToolFailed brief = brief_failure(full, Audience::command_line);
    std::string text = brief.what();
    EXPECT_EQ(text.find("kiln filler line"), std::string::npos) << text;
    EXPECT_LT(lines(text), 40u) << text;
    EXPECT_NE(text.find("error: expected an expression"), std::string::npos) << text;
    EXPECT_NE(text.find("Command line: "), std::string::npos) << text;
    EXPECT_EQ(brief.command_line(), full.command_line());
    EXPECT_EQ(brief.ending(), full.ending());
    EXPECT_EQ(brief.status(), full.status());
    EXPECT_EQ(brief.label(),
              backend == Backend::nvcc ? "Compilation error:" : "NVRTC compilation failed:");
    EXPECT_NE(text.find((dir / "one.cu").string() + "(23): error"), std::string::npos) << text;
    EXPECT_EQ(text.find("hint:"), std::string::npos) << "no host code here";
  }
}

// A program with host code: a host header and main(). NVRTC cannot compile it and the brief
// message says what can; nvcc compiles it.
TEST_F(CudaMessages, HostCodeGetsTheHintInEachAudiencesWords) {
  const std::string program =
      "#include <stdio.h>\n"
      "__global__ void k(float* a) { a[threadIdx.x] *= 2; }\n"
      "int main() {\n  float* d;\n  cudaMalloc(&d, 4);\n  k<<<1, 1>>>(d);\n"
      "  printf(\"done\\n\");\n  return 0;\n}\n";
  ToolFailed full = failure("host.cu", program, Backend::nvrtc);
  EXPECT_TRUE(shows_host_code(full.output())) << full.output();
  std::string cli = brief_failure(full, Audience::command_line).what();
  EXPECT_NE(cli.find("hint: NVRTC compiles device code only"), std::string::npos) << cli;
  EXPECT_NE(cli.find("--backend nvcc"), std::string::npos) << cli;
  std::string manifest = brief_failure(full, Audience::manifest).what();
  EXPECT_NE(manifest.find("\"backend\": \"nvcc\""), std::string::npos) << manifest;
  EXPECT_EQ(std::count(cli.begin(), cli.end(), '\n'),
            std::count(manifest.begin(), manifest.end(), '\n'));
  std::string cubin = compile(program, {.format = Format::cubin,
                                        .arch = "sm_80",
                                        .source_path = dir / "host.cu",
                                        .backend = Backend::nvcc,
                                        .use_cache = false})
                          .bytes;
  EXPECT_EQ(cubin.substr(0, 4),
            "\x7f"
            "ELF")
      << "nvcc compiles what the hint sends it";
}

// What NVRTC 13 really says, for each kind of host code, and for device code that fails for
// other reasons.
TEST_F(CudaMessages, TheHintFollowsWhatNvrtcSays) {
  const std::string kernel = "__global__ void k(float* a) { a[threadIdx.x] *= 2; }\n";
  struct Case {
    std::string name;
    std::string code;
    bool host;
  };
  for (const Case& c : {
           Case{"vector", "#include <vector>\n" + kernel, true},
           Case{"cstdio", "#include <cstdio>\n" + kernel, true},
           Case{"sys_time", "#include <sys/time.h>\n" + kernel, true},
           Case{"runtime",
                kernel + "void run(float* d) { cudaMemcpy(d, d, 4, cudaMemcpyDefault); }\n", true},
           Case{"launch", kernel + "int main() { k<<<1, 1>>>(nullptr); return 0; }\n", true},
           Case{"own_header", "#include \"missing.cuh\"\n" + kernel, false},
           Case{"syntax", kernel + "__device__ int f() { int y = ; return y; }\n", false},
       }) {
    SCOPED_TRACE(c.name);
    ToolFailed full = failure(c.name + ".cu", c.code, Backend::nvrtc);
    EXPECT_EQ(shows_host_code(full.output()), c.host) << full.output();
    std::string brief = brief_failure(full, Audience::command_line).what();
    EXPECT_EQ(brief.find("hint:") != std::string::npos, c.host) << brief;
  }
}

TEST_F(CudaMessages, TheFatbinRefusalNamesTheAudiencesSettings) {
  EXPECT_EQ(nvrtc_fatbin_refusal(Audience::command_line),
            "NVRTC does not support fatbin generation: use --format cubin or --format ptx with "
            "NVRTC, or --backend nvcc for a fatbin");
  EXPECT_EQ(nvrtc_fatbin_refusal(Audience::manifest),
            "NVRTC does not support fatbin generation: use \"format\": \"cubin\" or \"format\": "
            "\"ptx\" with NVRTC, or \"backend\": \"nvcc\" for a fatbin");
  try {  // the library keeps the seed's words, for tvm.support's callers
    compile_cuda("__global__ void k() {}\n", {.format = Format::fatbin, .arch = "sm_80"});
    ADD_FAILURE() << "NVRTC made a fatbin";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("target_format='cubin'"), std::string::npos);
  }
}

}  // namespace
}  // namespace kiln::cuda
