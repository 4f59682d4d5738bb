// kiln build and the processes it starts: what happens to the compilers when kiln is hung up on,
// killed or loses its reader, limits no clock can hold, and a compiler that hangs when asked its
// version. The compilers are stand-ins (shell scripts) that differ from a real one only in the
// way each test is about; the rest is done by the real gcc.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/cuda_kernel.h"
#include "testing/test_support.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using testing::read_file;

// A manifest, its compilers, an output directory and a private cache in one temp directory.
class Project {
 public:
  Project() { fs::create_directories(dir_ / "cache"); }

  void write(const std::string& name, const std::string& text, bool executable = false) {
    std::ofstream(dir_ / name) << text;
    if (executable) fs::permissions(dir_ / name, fs::perms::owner_all);
  }
  fs::path path(const std::string& name) const { return dir_ / name; }
  fs::path out() const { return dir_ / "out"; }
  std::map<std::string, std::optional<std::string>> env() const {
    return {{"KILN_CACHE_DIR", (dir_ / "cache").string()}, {"KILN_NO_CACHE", std::nullopt}};
  }
  std::vector<std::string> build_args(std::vector<std::string> more = {}) const {
    std::vector<std::string> args{"build",  path("kiln.json").string(),  "--out", out().string(),
                                  "--json", path("result.json").string()};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  RunResult build(std::vector<std::string> more = {}) const {
    return testing::kiln_cli(build_args(std::move(more)), env());
  }
  std::map<std::string, json> results() const {
    std::map<std::string, json> jobs;
    json doc = json::parse(read_file(path("result.json")));
    for (const json& job : doc["jobs"]) {
      jobs[job["name"].get<std::string>()] = job;
    }
    return jobs;
  }
  std::vector<std::string> temporaries() const {
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(out(), ec)) {
      std::string name = entry.path().filename().string();
      if (name.starts_with(".kiln-tmp")) found.push_back(name);
    }
    return found;
  }

 private:
  TempDirectory dir_;
};

json c_job(const std::string& name, const std::string& code) {
  return {{"name", name}, {"kind", "object"}, {"code", code}, {"language", "c"}};
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

// Starts kiln with `args`, its stdout on `stdout_fd`, its stderr to /dev/null.
pid_t spawn_kiln(std::vector<std::string> args, int stdout_fd,
                 const std::map<std::string, std::optional<std::string>>& env) {
  args.insert(args.begin(), KILN_BINARY);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    if (!env.contains(entry.substr(0, entry.find('=')))) environment.push_back(entry);
  }
  for (const auto& [name, value] : env) {
    if (value) environment.push_back(name + "=" + *value);
  }
  std::vector<char*> envp;
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0);
  return pid;
}

// The exit status as a shell reports it (128 + the signal for a killed process).
int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) == -1 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// kiln building one job whose compiler sleeps, started with stdout to /dev/null; returns kiln's
// pid and the compiler's, once the compiler runs.
std::pair<pid_t, pid_t> start_sleeping_build(Project& project, const std::string& marker) {
  project.write("sleepy-cc", sleeping_compiler(project.path("cc.pid"), marker), true);
  json job = c_job("sleepy", "int s(void) { return 1; }");
  job["cc"] = project.path("sleepy-cc").string();
  job["timeout"] = 0;
  std::ofstream(project.path("kiln.json")) << json{{"jobs", {job}}}.dump(2);
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  pid_t kiln = spawn_kiln(project.build_args(), devnull, project.env());
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
  Project project;
  std::string marker = fmt::format("{}", 700000 + ::getpid() % 99999);
  auto [kiln, started] = start_sleeping_build(project, marker);
  pid_t compiler = started;  // a lambda cannot capture a structured binding (clang)
  ASSERT_GT(compiler, 0);
  ::kill(kiln, SIGHUP);
  EXPECT_EQ(wait_exit(kiln), 128 + SIGHUP);
  EXPECT_TRUE(eventually([&] { return !running(compiler); })) << "the compiler survived SIGHUP";
  if (running(compiler)) ::kill(compiler, SIGKILL);
  EXPECT_EQ(project.temporaries(), std::vector<std::string>{});
}

// SIGKILL gives kiln no chance to clean up: its compilers die with it all the same, and the next
// build in the same --out removes the temporary directory it left.
TEST(BuildLifetime, KillingKilnKillsItsCompilersAndTheNextRunRemovesItsTemporaries) {
  Project project;
  std::string marker = fmt::format("{}", 600000 + ::getpid() % 99999);
  auto [kiln, started] = start_sleeping_build(project, marker);
  pid_t compiler = started;  // a lambda cannot capture a structured binding (clang)
  ASSERT_GT(compiler, 0);
  ::kill(kiln, SIGKILL);
  EXPECT_EQ(wait_exit(kiln), 128 + SIGKILL);
  EXPECT_TRUE(eventually([&] { return !running(compiler); })) << "the compiler outlived kiln";
  if (running(compiler)) ::kill(compiler, SIGKILL);
  EXPECT_FALSE(project.temporaries().empty()) << "SIGKILL should have left kiln's work directory";

  std::ofstream(project.path("kiln.json"))
      << json{{"jobs", {c_job("quick", "int q(void) { return 1; }")}}}.dump(2);
  RunResult r = project.build();
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  EXPECT_EQ(project.temporaries(), std::vector<std::string>{});
}

// `kiln build | head -1`: the reader goes away; kiln neither dies of SIGPIPE nor hangs, the build
// runs to its end and the exit status is the build's.
TEST(BuildLifetime, AClosedStdoutNeitherKillsNorStopsTheBuild) {
  Project project;
  json jobs = json::array();
  for (int i = 0; i < 6; ++i) {
    jobs.push_back(
        c_job(fmt::format("j{}", i), fmt::format("int f{0}(void) {{ return {0}; }}", i)));
  }
  std::ofstream(project.path("kiln.json")) << json{{"jobs", jobs}}.dump(2);
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ::close(fds[0]);  // the reader is gone before kiln writes a byte
  pid_t kiln = spawn_kiln(project.build_args({"-j2"}), fds[1], project.env());
  ::close(fds[1]);
  EXPECT_EQ(wait_exit(kiln), 0) << "141 is death by SIGPIPE";
  std::map<std::string, json> results = project.results();
  ASSERT_EQ(results.size(), 6U);
  for (const auto& [name, job] : results) EXPECT_EQ(job["status"], "done") << job.dump();
}

// Timeouts no clock can hold (1e10 s is past what nanoseconds in 64 bits reach; 1e300; a
// 30-digit integer; --timeout inf) are no limit, not "timed out after 0s". NaN and negative
// values are refused with exit 2, naming the value.
TEST(BuildLifetime, TimeoutsBeyondTheClockAreNoLimitAndNonsenseIsRefused) {
  Project project;
  project.write("kiln.json", R"({"jobs": [
    {"name": "a", "kind": "object", "language": "c", "code": "int a;", "timeout": 1e10},
    {"name": "b", "kind": "object", "language": "c", "code": "int b;", "timeout": 1e300},
    {"name": "c", "kind": "object", "language": "c", "code": "int c;",
     "timeout": 123456789012345678901234567890}]})");
  RunResult r = project.build();
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  for (const auto& [name, job] : project.results()) EXPECT_EQ(job["status"], "done") << job.dump();

  r = project.build({"--no-cache", "--timeout", "inf"});
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  for (const auto& [name, job] : project.results()) EXPECT_EQ(job["status"], "done") << job.dump();

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
  Project project;
  std::string marker = fmt::format("{}", 500000 + ::getpid() % 99999);
  project.write("mute-cc",
                "#!/bin/sh\ncase \"$1\" in --version) exec sleep " + marker +
                    ";; esac\n"
                    "exec gcc \"$@\"\n",
                true);
  json job = c_job("mute", "int m(void) { return 1; }");
  job["cc"] = project.path("mute-cc").string();
  job["timeout"] = 1;
  std::ofstream(project.path("kiln.json"))
      << json{{"jobs", {job, c_job("fine", "int f(void) { return 1; }")}}}.dump(2);
  RunResult r = project.build({"--keep-going"});
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  std::map<std::string, json> results = project.results();
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
  Project project;
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
  std::ofstream(project.path("kiln.json")) << json{{"jobs", jobs}}.dump(2);
  auto env = project.env();
  env["TMPDIR"] = tmp.path().string();
  RunResult r = testing::kiln_cli(project.build_args({"-j1"}), env);
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  for (const auto& [name, job] : project.results()) EXPECT_EQ(job["status"], "done") << job.dump();
  EXPECT_EQ(tmp.listdir(), std::vector<std::string>{}) << "kiln build left files in TMPDIR";
  EXPECT_EQ(project.temporaries(), std::vector<std::string>{});
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
