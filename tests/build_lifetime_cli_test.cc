// kiln build and the processes it starts: what happens to the compilers when kiln is hung up on,
// killed or loses its reader, limits no clock can hold, and a compiler that hangs when asked its
// version. The compilers are stand-ins (shell scripts) that differ from a real one only in the
// way each test is about; the rest is done by the real gcc.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_project.h"
#include "cli_support.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/cuda_kernel.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using testing::BuildProject;
using testing::c_job;
using testing::read_file;
using testing::wait_exit;

// The temporaries kiln left in the project's --out.
std::vector<std::string> temporaries(const BuildProject& project) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(project.out(), ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with(".kiln-tmp")) found.push_back(name);
  }
  return found;
}

// A compiler that answers --version like gcc, and on a compile writes its pid to `pid_file` and
// sleeps (the sleep carries `marker` on its command line).
std::string sleeping_compiler(const fs::path& pid_file, const std::string& marker) {
  return fmt::format(
      "#!/bin/sh\ncase \"$1\" in --version) exec gcc --version;; esac\necho $$ > {}.tmp\n"
      "mv {}.tmp {}\nexec sleep {}\n",
      pid_file.string(), pid_file.string(), pid_file.string(), marker);
}

// Whether process `pid` is still running (a zombie is not).
bool running(pid_t pid) {
  std::string stat = read_file(fs::path("/proc") / std::to_string(pid) / "stat");
  return !stat.empty() && stat.find(") Z ") == std::string::npos &&
         stat.find(") X ") == std::string::npos;
}

// Waits (polling) up to `limit` for `done`; returns whether it happened.
template <class Done>
bool eventually(Done done, std::chrono::seconds limit = 20s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// kiln building one job whose compiler sleeps, started with stdout to /dev/null; returns kiln's
// pid and the compiler's, once the compiler runs.
std::pair<pid_t, pid_t> start_sleeping_build(BuildProject& project, const std::string& marker) {
  project.write("sleepy-cc", sleeping_compiler(project.path("cc.pid"), marker), true);
  json job = c_job("sleepy", "int s(void) { return 1; }");
  job["cc"] = project.path("sleepy-cc").string();
  job["timeout"] = 0;
  project.manifest({{"jobs", {job}}});
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  pid_t kiln = project.start({}, devnull);
  ::close(devnull);
  EXPECT_TRUE(eventually([&] { return fs::exists(project.path("cc.pid")); }))
      << "the compiler never started";
  pid_t compiler = 0;
  if (fs::exists(project.path("cc.pid"))) compiler = std::stoi(read_file(project.path("cc.pid")));
  return {kiln, compiler};
}

// Closing the terminal (SIGHUP) stops the build like Ctrl-C: the compiler is killed, no temporary
// directory is left, and kiln says so in its exit status (128 + SIGHUP) without dying of it.
TEST(BuildLifetime, HangingUpOnKilnKillsItsCompilersAndLeavesNoTemporaries) {
  BuildProject project;
  std::string marker = fmt::format("{}", 700000 + ::getpid() % 99999);
  auto [kiln, started] = start_sleeping_build(project, marker);
  pid_t compiler = started;  // a lambda cannot capture a structured binding (clang)
  ASSERT_GT(compiler, 0);
  ::kill(kiln, SIGHUP);
  EXPECT_EQ(wait_exit(kiln), 128 + SIGHUP);
  EXPECT_TRUE(eventually([&] { return !running(compiler); })) << "the compiler survived SIGHUP";
  if (running(compiler)) ::kill(compiler, SIGKILL);
  EXPECT_EQ(temporaries(project), std::vector<std::string>{});
}

// SIGKILL gives kiln no chance to clean up: its compilers die with it all the same, and the next
// build in the same --out removes the temporary directory it left.
TEST(BuildLifetime, KillingKilnKillsItsCompilersAndTheNextRunRemovesItsTemporaries) {
  BuildProject project;
  std::string marker = fmt::format("{}", 600000 + ::getpid() % 99999);
  auto [kiln, started] = start_sleeping_build(project, marker);
  pid_t compiler = started;  // a lambda cannot capture a structured binding (clang)
  ASSERT_GT(compiler, 0);
  ::kill(kiln, SIGKILL);
  EXPECT_EQ(wait_exit(kiln), 128 + SIGKILL);
  EXPECT_TRUE(eventually([&] { return !running(compiler); })) << "the compiler outlived kiln";
  if (running(compiler)) ::kill(compiler, SIGKILL);
  EXPECT_FALSE(temporaries(project).empty()) << "SIGKILL should have left kiln's work directory";

  project.manifest({{"jobs", {c_job("quick", "int q(void) { return 1; }")}}});
  RunResult r = project.build();
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  EXPECT_EQ(temporaries(project), std::vector<std::string>{});
}

// `kiln build | head -1`: the reader goes away; kiln neither dies of SIGPIPE nor hangs, the build
// runs to its end and the exit status is the build's.
TEST(BuildLifetime, AClosedStdoutNeitherKillsNorStopsTheBuild) {
  BuildProject project;
  json jobs = json::array();
  for (int i = 0; i < 6; ++i) {
    jobs.push_back(
        c_job(fmt::format("j{}", i), fmt::format("int f{0}(void) {{ return {0}; }}", i)));
  }
  project.manifest({{"jobs", jobs}});
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ::close(fds[0]);  // the reader is gone before kiln writes a byte
  pid_t kiln = project.start({.args = {"-j2"}}, fds[1]);
  ::close(fds[1]);
  EXPECT_EQ(wait_exit(kiln), 0) << "141 is death by SIGPIPE";
  std::map<std::string, json> results = project.jobs();
  ASSERT_EQ(results.size(), 6U);
  for (const auto& [name, job] : results) EXPECT_EQ(job["status"], "done") << job.dump();
}

// Timeouts no clock can hold (1e10 s is past what nanoseconds in 64 bits reach; 1e300; a
// 30-digit integer; --timeout inf) are no limit, not "timed out after 0s". NaN and negative
// values are refused with exit 2, naming the value.
TEST(BuildLifetime, TimeoutsBeyondTheClockAreNoLimitAndNonsenseIsRefused) {
  BuildProject project;
  project.write("kiln.json", R"({"jobs": [
    {"name": "a", "kind": "object", "language": "c", "code": "int a;", "timeout": 1e10},
    {"name": "b", "kind": "object", "language": "c", "code": "int b;", "timeout": 1e300},
    {"name": "c", "kind": "object", "language": "c", "code": "int c;",
     "timeout": 123456789012345678901234567890}]})");
  RunResult r = project.build();
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  for (const auto& [name, job] : project.jobs()) EXPECT_EQ(job["status"], "done") << job.dump();

  r = project.build({"--no-cache", "--timeout", "inf"});
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  for (const auto& [name, job] : project.jobs()) EXPECT_EQ(job["status"], "done") << job.dump();

  for (std::string bad : {"nan", "-1"}) {
    SCOPED_TRACE(bad);
    r = project.build({"--timeout", bad});
    EXPECT_EQ(r.exit_code, 2) << r.output << r.error_output;
    EXPECT_NE(r.error_output.find(bad), std::string::npos) << r.error_output;
  }
  project.write("kiln.json", R"({"jobs": [
    {"name": "a", "kind": "object", "language": "c", "code": "int a;", "timeout": -1}]})");
  r = project.build();
  EXPECT_EQ(r.exit_code, 2) << r.output << r.error_output;
  EXPECT_NE(r.error_output.find("-1"), std::string::npos) << r.error_output;
}

// A compiler that hangs when asked its version: the probe is cut off at its own limit (here the
// job's, which is shorter) and the job fails saying so, instead of its compile command being
// blamed for "timed out after 0s".
TEST(BuildLifetime, ACompilerHangingOnVersionFailsTheJobInTheProbe) {
  BuildProject project;
  std::string marker = fmt::format("{}", 500000 + ::getpid() % 99999);
  project.write("mute-cc",
                "#!/bin/sh\ncase \"$1\" in --version) exec sleep " + marker +
                    ";; esac\n"
                    "exec gcc \"$@\"\n",
                true);
  json job = c_job("mute", "int m(void) { return 1; }");
  job["cc"] = project.path("mute-cc").string();
  job["timeout"] = 1;
  project.manifest({{"jobs", {job, c_job("fine", "int f(void) { return 1; }")}}});
  RunResult r = project.build({"--keep-going"});
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  std::map<std::string, json> results = project.jobs();
  const json& mute = results["mute"];
  EXPECT_EQ(mute["status"], "timeout") << mute.dump();
  std::string log = mute["log"];
  EXPECT_NE(log.find("probe"), std::string::npos) << log;
  EXPECT_NE(log.find("--version"), std::string::npos) << log;
  EXPECT_EQ(log.find("after 0s"), std::string::npos) << log;
  EXPECT_EQ(results["fine"]["status"], "done");
  EXPECT_TRUE(eventually([&] {
    return std::none_of(fs::directory_iterator("/proc"), fs::directory_iterator(),
                        [&](const fs::directory_entry& e) {
                          std::string cmdline = read_file(e.path() / "cmdline");
                          return cmdline.find(marker) != std::string::npos &&
                                 running(std::atoi(e.path().filename().c_str()));
                        });
  })) << "the hanging probe survived";
}

// NVRTC's automatic precompiled headers (TMPDIR/__nvrtc_auto_pch_<pid>_0, megabytes a job) are
// removed only when the process using NVRTC exits normally, and kiln build's NVRTC workers are
// killed. Neither kiln build nor kiln cuda compile may leave anything in TMPDIR (NVRTC's only
// place for them; /tmp itself is not compared: other tests running at the same time use NVRTC).
TEST(BuildLifetime, NvrtcCompilesLeaveNothingInTmpdir) {
  try {
    cuda::nvrtc_version();
  } catch (const Error& e) {
    GTEST_SKIP() << "needs NVRTC: " << e.what();
  }
  BuildProject project;
  TempDirectory tmp;
  std::ofstream(project.path("k.cu")) << kiln::testing::kPreambleKernel;
  json jobs = json::array();
  for (std::string name : {"k1", "k2"}) {  // one worker, two compiles (the second reuses the PCH)
    jobs.push_back({{"name", name},
                    {"kind", "cuda"},
                    {"sources", {project.path("k.cu").string()}},
                    {"arch", "sm_80"},
                    {"backend", "nvrtc"},
                    {"options", {"-DKILN_JOB_" + name}}});
  }
  project.manifest({{"jobs", jobs}});
  testing::Environment env = project.env({{"TMPDIR", tmp.path().string()}});
  RunResult r = project.build({"-j1"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  for (const auto& [name, job] : project.jobs()) EXPECT_EQ(job["status"], "done") << job.dump();
  EXPECT_EQ(tmp.listdir(), std::vector<std::string>{}) << "kiln build left files in TMPDIR";
  EXPECT_EQ(temporaries(project), std::vector<std::string>{});
  size_t sockets = 0;  // the compiles went through kiln's compile server, whose files are its own
  for (const auto& entry : fs::directory_iterator(project.path("cache") / "servers")) {
    sockets += entry.path().extension() == ".sock" ? 1 : 0;
  }
  EXPECT_EQ(sockets, 1u);

  r = testing::kiln_cli({"cuda", "compile", project.path("k.cu").string(), "--arch", "sm_80", "-o",
                         project.path("k.cubin").string()},
                        env);
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  EXPECT_EQ(tmp.listdir(), std::vector<std::string>{}) << "kiln cuda compile left files in TMPDIR";
}

}  // namespace
}  // namespace kiln
