// kiln build while its own program is deleted or replaced (an upgrade in another terminal): its
// NVRTC jobs run in pool workers that are kiln re-executed, started only once the build reaches
// them. They must run the kiln that is building, never be "skipped (toolchain absent)". The
// build runs a copy of the kiln binary; a first job's compiler (gcc behind a gate) holds the
// build until the copy has been deleted or replaced. Skips, saying why, without NVRTC.
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_project.h"
#include "kiln/cuda.h"
#include "kiln/elf.h"
#include "testing/cuda_kernel.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

constexpr int kKernels = 4;
constexpr unsigned kEmCuda = 190;

std::optional<std::string> nvrtc_missing() {
  if (auto why = testing::cuda_toolkit_missing()) return why;
  try {
    (void)cuda::nvrtc_version();
    return std::nullopt;
  } catch (const Error& e) {
    return std::string("needs NVRTC: ") + e.what();
  }
}

// A copy of kiln, a gated compiler and a manifest of NVRTC jobs that wait for the gated one.
class UpgradedProject : public testing::BuildProject {
 public:
  UpgradedProject() {
    fs::create_directories(path("bin"));
    fs::copy_file(KILN_BINARY, kiln());
    json jobs = json::array({testing::c_job("gate", "int gate(void) { return 1; }")});
    jobs[0]["cc"] = gated_compiler("gate").string();  // holds the build until the file gate.go
    for (int i = 0; i < kKernels; ++i) {
      jobs.push_back(
          {{"name", fmt::format("k{}", i)},
           {"kind", "cuda"},
           {"code", fmt::format("extern \"C\" __global__ void k{0}(int* p) {{ p[0] = {0}; }}", i)},
           {"arch", "sm_80"},
           {"format", "cubin"},
           {"backend", "nvrtc"},
           {"deps", {"gate"}}});
    }
    manifest({{"jobs", jobs}});
  }

  fs::path kiln() const { return path("bin") / "kiln"; }

  // Starts `kiln build -j2` from the copy; once the gated compile runs, calls `meanwhile` and
  // lets the build go on. Returns the build's result.
  RunResult build_while(const std::function<void()>& meanwhile, testing::Environment env) {
    env["KILN_SERVER_IDLE"] = "20";
    std::future<RunResult> build = std::async(std::launch::async, [&] {
      return build_with({.args = {"-j2"}, .env = env, .kiln = kiln(), .timeout = 180s});
    });
    auto deadline = std::chrono::steady_clock::now() + 120s;
    while (!fs::exists(path("gate.started")) && std::chrono::steady_clock::now() < deadline &&
           build.wait_for(50ms) != std::future_status::ready) {
    }
    bool started = fs::exists(path("gate.started"));
    if (started) meanwhile();
    std::ofstream(path("gate.go")).flush();
    RunResult result = build.get();
    EXPECT_TRUE(started) << "the gated compile never ran: " << result.output << result.error_output;
    return result;
  }
};

void expect_every_kernel_made(const UpgradedProject& project, const RunResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  EXPECT_EQ(r.output.find("toolchain absent"), std::string::npos) << r.output;
  std::map<std::string, json> jobs = project.jobs();
  EXPECT_EQ(jobs["gate"]["status"], "done") << jobs["gate"].dump();
  for (int i = 0; i < kKernels; ++i) {
    const json& job = jobs[fmt::format("k{}", i)];
    ASSERT_EQ(job["status"], "done") << job.dump();
    EXPECT_EQ(read_elf_machine(job["output"].get<std::string>()), kEmCuda) << job.dump();
  }
}

// `rm kiln` while it builds: the workers it starts afterwards are the kiln that runs, not the
// path it was started from ("cannot run '.../kiln (deleted)'").
TEST(BuildUpgradeCli, KilnDeletedMidBuildStillMakesItsNvrtcJobs) {
  if (auto why = nvrtc_missing()) GTEST_SKIP() << *why;
  UpgradedProject project;
  RunResult r = project.build_while([&] { fs::remove(project.kiln()); }, {{"KILN_NO_SERVER", "1"}});
  expect_every_kernel_made(project, r);
}

// An upgrade renames a new file over the old one; here the new "kiln" is a program that is no
// kiln at all. The workers, and the compile server they start, are still the kiln that builds.
TEST(BuildUpgradeCli, KilnReplacedMidBuildStillMakesItsNvrtcJobsWithTheServer) {
  if (auto why = nvrtc_missing()) GTEST_SKIP() << *why;
  UpgradedProject project;
  auto replace = [&] {
    fs::path next = project.kiln().string() + ".new";
    std::ofstream(next) << "#!/bin/sh\nexit 3\n";
    fs::permissions(next, fs::perms::owner_all);
    fs::rename(next, project.kiln());
  };
  RunResult r = project.build_while(replace, {{"KILN_NO_SERVER", std::nullopt}});
  expect_every_kernel_made(project, r);
}

}  // namespace
}  // namespace kiln
