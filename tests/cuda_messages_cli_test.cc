// What `kiln cuda compile` and `kiln build` say about CUDA compiles, run as a user would, with the
// real nvcc and NVRTC: the user's file and its includes, failures told briefly and naming the
// file, the NVRTC host-code hint, the fatbin refusal in the command line's words, the compiler's
// warnings kept, the cache named, the NVRTC command shown, every target NVRTC takes listed.
// Skips, saying why, without a CUDA toolkit.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/cuda_kernel.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::kiln_cli;

class CudaMessages : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::cuda_toolkit_missing()) GTEST_SKIP() << *why;
    fs::create_directories(dir / "src");
  }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
  }
  fs::path path(const std::string& name) const { return dir / name; }
  std::map<std::string, std::optional<std::string>> env() const {
    return {{"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_NO_CACHE", std::nullopt}};
  }
  // kiln cuda compile FILE --arch sm_80 -o DIR/out.<format> args...
  RunResult compile(const std::string& file, std::vector<std::string> args = {},
                    const std::string& format = "cubin") const {
    std::vector<std::string> argv = {"cuda",   "compile", path(file).string(),
                                     "--arch", "sm_80",   "--format",
                                     format,   "-o",      path("out." + format).string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return kiln_cli(argv, env());
  }
  // kiln build of `jobs` with --json; returns the run, the --json document in `result`.
  RunResult build(const json& jobs, json& result, std::vector<std::string> args = {}) const {
    std::ofstream(dir / "kiln.json") << json{{"jobs", jobs}}.dump(2);
    std::vector<std::string> argv = {"build",  path("kiln.json").string(),
                                     "--out",  path("out").string(),
                                     "--json", path("result.json").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = kiln_cli(argv, env());
    std::string text = testing::read_file(path("result.json"));
    result = text.empty() ? json() : json::parse(text);
    return r;
  }
  TempDirectory dir;
};

// A header that lies beside the file, found by "..." as nvcc finds it for a file it is given,
// wherever kiln runs from.
TEST_F(CudaMessages, NvccFindsQuotedIncludesBesideTheFile) {
  write("src/val.cuh", "#define VALUE 515151\n");
  write("src/k.cu",
        "#include \"val.cuh\"\nextern \"C\" __global__ void k(int* a) { a[0] = VALUE; }\n");
  RunResult r = compile("src/k.cu", {"--backend", "nvcc"}, "ptx");
  ASSERT_EQ(r.exit_code, 0) << r.error_output;
  EXPECT_NE(testing::read_file(path("out.ptx")).find("515151"), std::string::npos);
}

// A kernel with one error, on line 23, below twenty lines that only a message quoting the whole
// source would repeat.
std::string one_error_kernel() {
  std::string code;
  for (int i = 1; i <= 20; ++i) code += "// kiln filler line " + std::to_string(i) + "\n";
  return code + "extern \"C\" __global__ void k(float* a) {\n  a[0] = 1;\n  int x = ;\n}\n";
}

// A program with host code: a host header, the runtime API, a launch and main().
constexpr const char* kHostProgram =
    "#include <stdio.h>\n"
    "__global__ void k(float* a) { a[threadIdx.x] *= 2; }\n"
    "int main() {\n  float* d;\n  cudaMalloc(&d, 4);\n  k<<<1, 1>>>(d);\n"
    "  printf(\"done\\n\");\n  return 0;\n}\n";

size_t lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

// The failure of a one-error kernel: the compiler's message naming the file and line, the command
// line, no source, under 40 lines; from kiln cuda compile and from kiln build (printed, and in
// --json's log), both backends.
TEST_F(CudaMessages, AOneErrorKernelFailsBrieflyNamingTheFile) {
  write("src/one.cu", one_error_kernel());
  std::string file = path("src/one.cu").string();
  for (const std::string backend : {"nvrtc", "nvcc"}) {
    SCOPED_TRACE(backend);
    RunResult r = compile("src/one.cu", {"--backend", backend});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_LT(lines(r.error_output), 40u) << r.error_output;
    EXPECT_EQ(r.error_output.find("kiln filler line"), std::string::npos) << r.error_output;
    EXPECT_NE(r.error_output.find("error: expected an expression"), std::string::npos);
    EXPECT_NE(r.error_output.find("Command line: "), std::string::npos) << r.error_output;
    EXPECT_NE(r.error_output.find(file + "(23): error"), std::string::npos) << r.error_output;
  }
  json result;
  RunResult r =
      build({{{"name", "with_nvrtc"}, {"kind", "cuda"}, {"sources", {file}}, {"arch", "sm_80"}},
             {{"name", "with_nvcc"},
              {"kind", "cuda"},
              {"sources", {file}},
              {"arch", "sm_80"},
              {"backend", "nvcc"}}},
            result, {"--keep-going", "-j1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output.find("kiln filler line"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("kiln::"), std::string::npos) << r.output;
  EXPECT_LT(lines(r.output), 2 * 40u) << r.output;
  ASSERT_EQ(result["jobs"].size(), 2u);
  for (const json& job : result["jobs"]) {
    SCOPED_TRACE(job["name"].get<std::string>());
    std::string log = job["log"];
    EXPECT_EQ(job["status"], "failed");
    EXPECT_LT(lines(log), 40u) << log;
    EXPECT_EQ(log.find("kiln filler line"), std::string::npos) << log;
    EXPECT_EQ(log.find("kiln::ToolFailed"), std::string::npos) << log;
    EXPECT_NE(log.find("error: expected an expression"), std::string::npos) << log;
    EXPECT_NE(log.find(file + "(23): error"), std::string::npos) << log;
  }
}

// NVRTC cannot compile host code: the failure says so, and what can (in the command line's and in
// the manifest's words); nvcc then compiles the file.
TEST_F(CudaMessages, HostCodeGetsTheNvccHint) {
  write("src/host.cu", kHostProgram);
  RunResult r = compile("src/host.cu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.error_output.find("cannot open source file \"stdio.h\""), std::string::npos)
      << r.error_output;
  EXPECT_NE(r.error_output.find("hint: NVRTC compiles device code only"), std::string::npos)
      << r.error_output;
  EXPECT_NE(r.error_output.find("--backend nvcc compiles host code"), std::string::npos)
      << r.error_output;
  RunResult nvcc = compile("src/host.cu", {"--backend", "nvcc"});
  EXPECT_EQ(nvcc.exit_code, 0) << nvcc.error_output;
  json result;
  build({{{"name", "host"},
          {"kind", "cuda"},
          {"sources", {path("src/host.cu").string()}},
          {"arch", "sm_80"}}},
        result);
  ASSERT_EQ(result["jobs"].size(), 1u);
  std::string log = result["jobs"][0]["log"];
  EXPECT_NE(log.find("\"backend\": \"nvcc\" compiles host code"), std::string::npos) << log;
}

// NVRTC makes no fatbin: the command line names its options, a manifest its keys; neither speaks
// of tvm.support's arguments.
TEST_F(CudaMessages, TheFatbinRefusalNamesTheOptionsOrTheKeys) {
  write("src/k.cu", "extern \"C\" __global__ void k(float* a) { a[0] *= 2; }\n");
  RunResult r = compile("src/k.cu", {}, "fatbin");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.error_output.find("--format cubin or --format ptx"), std::string::npos)
      << r.error_output;
  EXPECT_NE(r.error_output.find("--backend nvcc"), std::string::npos) << r.error_output;
  EXPECT_EQ(r.error_output.find("target_format"), std::string::npos) << r.error_output;
  json result;
  RunResult b = build({{{"name", "fat"},
                        {"kind", "cuda"},
                        {"sources", {path("src/k.cu").string()}},
                        {"arch", "sm_80"},
                        {"format", "fatbin"}}},
                      result);
  EXPECT_EQ(b.exit_code, 2) << "a manifest error, found before anything runs";
  EXPECT_NE(b.error_output.find("job \"fat\": NVRTC does not support fatbin generation"),
            std::string::npos)
      << b.error_output;
  EXPECT_NE(b.error_output.find("\"format\": \"cubin\""), std::string::npos) << b.error_output;
  EXPECT_NE(b.error_output.find("\"backend\": \"nvcc\""), std::string::npos) << b.error_output;
  EXPECT_EQ(b.error_output.find("target_format"), std::string::npos) << b.error_output;
}

// A successful compile's warnings and ptxas' resource lines (kiln asks ptxas for -v) are kept:
// kiln cuda compile prints them on stderr, kiln build keeps them in --json's "log" and prints
// them with -v. Both backends.
TEST_F(CudaMessages, WarningsOfASuccessfulCompileAreKept) {
  write("src/warn.cu",
        "extern \"C\" __global__ void k(float* a) {\n  int unused;\n  a[0] *= 2;\n}\n");
  const std::string warning = "variable \"unused\" was declared but never referenced";
  for (const std::string backend : {"nvrtc", "nvcc"}) {
    SCOPED_TRACE(backend);
    RunResult r = compile("src/warn.cu", {"--backend", backend});
    EXPECT_EQ(r.exit_code, 0) << r.error_output;
    EXPECT_NE(r.error_output.find(warning), std::string::npos) << r.error_output;
    EXPECT_NE(r.error_output.find("ptxas info"), std::string::npos) << r.error_output;
    EXPECT_EQ(r.output.find(warning), std::string::npos) << "stdout says what was written";
  }
  std::string file = path("src/warn.cu").string();
  json jobs = {{{"name", "with_nvrtc"}, {"kind", "cuda"}, {"sources", {file}}, {"arch", "sm_80"}},
               {{"name", "with_nvcc"},
                {"kind", "cuda"},
                {"sources", {file}},
                {"arch", "sm_80"},
                {"backend", "nvcc"},
                {"format", "cubin"}}};
  json result;
  RunResult quiet = build(jobs, result, {"-j1"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output << quiet.error_output;
  EXPECT_EQ(quiet.output.find(warning), std::string::npos) << "printed with -v only";
  for (const json& job : result["jobs"]) {
    SCOPED_TRACE(job["name"].get<std::string>());
    std::string log = job["log"];
    EXPECT_EQ(job["status"], "done");
    EXPECT_NE(log.find(warning), std::string::npos) << log;
    EXPECT_NE(log.find("ptxas info"), std::string::npos) << log;
    EXPECT_EQ(log.find("redefined"), std::string::npos) << "what the cache's header scan printed";
    EXPECT_EQ(log.find('\0'), std::string::npos) << "the NUL that ends NVRTC's log";
  }
  RunResult verbose = build(jobs, result, {"-j1", "--no-cache", "-v"});
  ASSERT_EQ(verbose.exit_code, 0) << verbose.output << verbose.error_output;
  EXPECT_EQ(testing::count_occurrences(verbose.output, warning), 2u) << verbose.output;
}

// kiln cuda compile says when the result came from kiln's kernel cache; both backends.
TEST_F(CudaMessages, ACompileSaysWhenTheCacheServedIt) {
  write("src/k.cu", "extern \"C\" __global__ void k(float* a) { a[0] *= 2; }\n");
  for (const std::string backend : {"nvrtc", "nvcc"}) {
    SCOPED_TRACE(backend);
    RunResult first = compile("src/k.cu", {"--backend", backend});
    ASSERT_EQ(first.exit_code, 0) << first.error_output;
    EXPECT_NE(first.output.find("(" + backend + ", sm_80)"), std::string::npos) << first.output;
    RunResult again = compile("src/k.cu", {"--backend", backend});
    ASSERT_EQ(again.exit_code, 0) << again.error_output;
    EXPECT_NE(again.output.find("(" + backend + ", sm_80, cached)"), std::string::npos)
        << again.output;
    EXPECT_EQ(testing::read_file(path("out.cubin")).substr(0, 4),
              "\x7f"
              "ELF");
  }
}

// An NVRTC job runs no program, yet --json's "command" shows what NVRTC got, as a command line;
// for a failed job too.
TEST_F(CudaMessages, AnNvrtcJobShowsItsOptionsAsACommand) {
  write("src/k.cu", "extern \"C\" __global__ void k(float* a) { a[0] *= 2; }\n");
  write("src/one.cu", one_error_kernel());
  json result;
  build({{{"name", "good"},
          {"kind", "cuda"},
          {"sources", {path("src/k.cu").string()}},
          {"arch", "sm_80"},
          {"options", {"-DKILN_MARK=1"}}},
         {{"name", "bad"},
          {"kind", "cuda"},
          {"sources", {path("src/one.cu").string()}},
          {"arch", "sm_80"}}},
        result, {"--keep-going", "-j1"});
  ASSERT_EQ(result["jobs"].size(), 2u);
  for (const json& job : result["jobs"]) {
    SCOPED_TRACE(job.dump());
    std::string command = job["command"].empty() ? "" : job["command"][0];  // then a header scan
    bool good = job["name"] == "good";
    EXPECT_EQ(job["status"], good ? "done" : "failed");
    EXPECT_TRUE(command.starts_with("nvrtc --gpu-architecture=sm_80 ")) << command;
    EXPECT_TRUE(command.ends_with(path(good ? "src/k.cu" : "src/one.cu").string())) << command;
    EXPECT_EQ(command.find(" -DKILN_MARK=1 ") != std::string::npos, good) << command;
  }
}

// kiln cuda info lists the arch-specific targets NVRTC compiles for beside the plain ones.
TEST_F(CudaMessages, InfoListsTheArchSpecificTargets) {
  RunResult r = kiln_cli({"cuda", "info", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.error_output;
  json archs = json::parse(r.output)["nvrtc_architectures"];
  ASSERT_TRUE(archs.is_array()) << archs.dump();
  auto listed = [&](const std::string& target) {
    return std::find(archs.begin(), archs.end(), target) != archs.end();
  };
  if (!listed("sm_90")) GTEST_SKIP() << "this NVRTC has no sm_90: " << archs.dump();
  EXPECT_TRUE(listed("sm_90a")) << archs.dump();
  EXPECT_FALSE(listed("sm_80a")) << archs.dump();
  std::vector<std::string> expected = cuda::nvrtc_targets();
  EXPECT_EQ(archs, json(expected));
}

}  // namespace
}  // namespace kiln
