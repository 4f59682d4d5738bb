// kiln build where one fact used to be derived on two paths: the key --dry-run looks a job up
// under is the key the build stored it under; a manifest's CUDA job gives NVRTC exactly what
// `kiln cuda compile` of the same file gives it, and the command it records is what NVRTC
// received; an NVRTC that crashes is reported with its signal whichever process it ran in, and
// the compile server takes every compile it can, starting no pool worker.
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "kiln/temp_directory.h"
#include "testing/cuda_kernel.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::kiln_cli;
using Env = std::map<std::string, std::optional<std::string>>;

TEST(BuildPlanCli, DryRunAfterABuildSaysCachedForEveryJobItBuilt) {
  TempDirectory dir;
  Env env{{"KILN_CACHE_DIR", (dir.path() / "cache").string()}, {"KILN_NO_CACHE", std::nullopt}};
  std::string manifest = std::string(KILN_SOURCE_DIR) + "/examples/kiln.json";
  std::string out = (dir.path() / "out").string();
  RunResult built = kiln_cli({"build", manifest, "--out", out, "--json", "-"}, env);
  ASSERT_EQ(built.exit_code, 0) << built.output << built.error_output;
  std::set<std::string> done;
  json report = json::parse(built.output);
  for (const json& job : report["jobs"]) {
    if (job["status"] == "done") done.insert(job["name"].get<std::string>());
  }
  ASSERT_FALSE(done.empty()) << built.output;

  RunResult planned = kiln_cli({"build", manifest, "--out", out, "--dry-run"}, env);
  ASSERT_EQ(planned.exit_code, 0) << planned.error_output;
  std::istringstream lines(planned.output);
  size_t cached = 0;
  for (std::string line; std::getline(lines, line);) {
    std::string name = line.substr(0, line.find(" -> "));
    name = name.substr(name.rfind(' ') + 1);
    if (!done.contains(name)) continue;
    EXPECT_TRUE(line.ends_with("(cached)")) << line;
    cached += line.ends_with("(cached)") ? 1 : 0;
  }
  EXPECT_EQ(cached, done.size()) << planned.output;
}

// One compile as the NVRTC stand-in recorded it.
struct Received {
  std::string process;
  std::string name;
  std::vector<std::string> options;
};

std::vector<Received> received(const fs::path& file) {
  std::vector<Received> all;
  std::istringstream lines(testing::read_file(file));
  Received one;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("process ")) one.process = line.substr(8);
    if (line.starts_with("name ")) one.name = line.substr(5);
    if (line.starts_with("option ")) one.options.push_back(line.substr(7));
    if (line == "end") all.push_back(std::exchange(one, {}));
  }
  return all;
}

// kiln build and kiln cuda compile in front of the NVRTC stand-in.
class BuildPlanCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::cuda_toolkit_missing()) GTEST_SKIP() << *why;
    std::string why;
    real_ = testing::real_nvrtc_for_test(false, why);
    if (real_.empty()) GTEST_SKIP() << why;
    // "near.h" is beside the kernel: both front ends find it there, and nothing else.
    std::ofstream(dir_.path() / "k.cu")
        << "#include \"near.h\"\nextern \"C\" __global__ void k(float* a) { a[0] *= NEAR; }\n";
    std::ofstream(dir_.path() / "near.h") << "#define NEAR 2\n";
    std::ofstream(dir_.path() / "kiln.json")
        << json{{"jobs",
                 {{{"name", "k"}, {"kind", "cuda"}, {"sources", {"k.cu"}}, {"arch", "sm_80"}}}}}
               .dump();
  }
  Env env(bool server) const {
    // Under a sanitizer, its handler would turn the stand-in's SIGSEGV into an exit with a code
    // (1, 66): a crashing NVRTC dies of its signal, as it does in any other build.
    auto without_segv_handler = [](const char* variable) {
      const char* given = std::getenv(variable);  // NOLINT(concurrency-mt-unsafe)
      return std::string(given != nullptr ? given : "") + ":handle_segv=0";
    };
    return {{"ASAN_OPTIONS", without_segv_handler("ASAN_OPTIONS")},
            {"TSAN_OPTIONS", without_segv_handler("TSAN_OPTIONS")},
            {"KILN_CACHE_DIR", (dir_.path() / "cache").string()},
            {"KILN_NO_CACHE", std::nullopt},
            {"KILN_NO_SERVER", server ? std::nullopt : std::optional<std::string>("1")},
            {"KILN_NVRTC", KILN_TEST_NVRTC_STANDIN},
            {"KILN_REAL_NVRTC", real_},
            {"KILN_NVRTC_RECEIVED", log().string()},
            {"KILN_NVRTC_CRASH", (dir_.path() / "crash").string()}};
  }
  fs::path log() const { return dir_.path() / "received"; }
  RunResult build(bool server) const {
    return kiln_cli({"build", (dir_.path() / "kiln.json").string(), "--out",
                     (dir_.path() / "out").string(), "--no-cache", "--json", "-"},
                    env(server));
  }
  std::string real_;
  TempDirectory dir_;
};

TEST_F(BuildPlanCuda, AManifestJobAndKilnCudaCompileGiveNvrtcTheSameProgram) {
  RunResult built = build(false);  // no server: no precompiled header in NVRTC's options
  ASSERT_EQ(built.exit_code, 0) << built.output << built.error_output;
  std::vector<Received> by_build = received(log());
  fs::remove(log());
  RunResult compiled = kiln_cli({"cuda", "compile", (dir_.path() / "k.cu").string(), "--arch",
                                 "sm_80", "-o", (dir_.path() / "k.cubin").string()},
                                env(false));
  ASSERT_EQ(compiled.exit_code, 0) << compiled.output << compiled.error_output;
  std::vector<Received> by_cli = received(log());
  ASSERT_EQ(by_build.size(), 1u);
  ASSERT_EQ(by_cli.size(), 1u);
  EXPECT_EQ(by_build[0].name, by_cli[0].name);
  EXPECT_EQ(by_build[0].options, by_cli[0].options);

  // What the build recorded as the job's command is what NVRTC received.
  json job = json::parse(built.output)["jobs"][0];
  ASSERT_EQ(job["command"].size(), 1u) << job.dump();
  std::string expected = "nvrtc";
  for (const std::string& option : by_build[0].options) expected += " " + option;
  expected += " " + by_build[0].name;
  EXPECT_EQ(job["command"][0], expected);
}

TEST_F(BuildPlanCuda, ACrashingNvrtcIsReportedWithItsSignalInTheServerAndInAWorker) {
  std::ofstream(dir_.path() / "crash") << "";
  for (bool server : {true, false}) {
    SCOPED_TRACE(server ? "in the compile server" : "in a pool worker");
    RunResult r = build(server);
    EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
    EXPECT_NE(r.error_output.find("crashed (SIGSEGV) cuda k"), std::string::npos) << r.error_output;
    json job = json::parse(r.output)["jobs"][0];
    EXPECT_EQ(job["status"], "crashed") << job.dump();
  }
}

TEST_F(BuildPlanCuda, WithTheServerUpNoPoolWorkerCompiles) {
  RunResult r = build(true);
  ASSERT_EQ(r.exit_code, 0) << r.output << r.error_output;
  std::vector<Received> compiles = received(log());
  ASSERT_FALSE(compiles.empty());
  for (const Received& compile : compiles) {
    EXPECT_EQ(compile.process, "--kiln-service") << "compiled by kiln " << compile.process;
  }
  fs::remove(log());
  ASSERT_EQ(build(false).exit_code, 0);  // and without it, a worker does
  compiles = received(log());
  ASSERT_EQ(compiles.size(), 1u);
  EXPECT_EQ(compiles[0].process, "--kiln-pool-worker");
}

TEST(BuildPlanCli, OutsideTextIsPrintedWithItsControlCharactersEscaped) {
  TempDirectory dir;
  fs::path manifest = dir.path() / "evil\x1b[2J.json";
  RunResult missing = kiln_cli({"build", manifest.string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.error_output.find('\x1b'), std::string::npos) << missing.error_output;
  EXPECT_NE(missing.error_output.find("evil\\x1b[2J.json"), std::string::npos)
      << missing.error_output;

  // A compiler's output that names such a file, in a failed job's log.
  std::ofstream(dir.path() / "bad\x1b[31m.c") << "int bad(void) { return }\n";
  std::ofstream(dir.path() / "kiln.json")
      << json{{"jobs", {{{"name", "bad"}, {"kind", "object"}, {"sources", {"bad\x1b[31m.c"}}}}}}
             .dump();
  RunResult failed = kiln_cli({"build", (dir.path() / "kiln.json").string(), "--out",
                               (dir.path() / "out").string(), "--no-cache"});
  EXPECT_EQ(failed.exit_code, 1) << failed.output << failed.error_output;
  EXPECT_EQ(failed.output.find('\x1b'), std::string::npos) << failed.output;
  EXPECT_NE(failed.output.find("bad\\x1b[31m.c"), std::string::npos) << failed.output;
}

}  // namespace
}  // namespace kiln
