// kiln build, run as a user would: the bundled examples, hanging, crashing and broken compilers,
// dependencies, manifest errors, the cache, distcc, progress on a terminal, --json, --trace and
// Ctrl-C. Every compiler is real; the "hanging" and "crashing" ones are real programs that hang
// or crash (shell scripts), standing for a compiler that does.
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_project.h"
#include "cli_support.h"
#include "kiln/elf.h"
#include "kiln/paths.h"
#include "testing/distcc_daemon.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using testing::BuildProject;
using testing::c_job;
using testing::kiln_cli;
using testing::read_file;
using testing::wait_exit;

// Pids of running processes whose command line contains `marker`.
std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_file(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    std::string stat = read_file(entry.path() / "stat");
    bool zombie = stat.find(") Z ") != std::string::npos;
    if (!zombie && cmdline.find(marker) != std::string::npos) found.push_back(std::stoi(name));
  }
  return found;
}

// The file's first bytes.
std::string head(const fs::path& path, size_t n) { return read_file(path).substr(0, n); }

TEST(BuildCli, TheBundledExamplesBuild) {
  BuildProject project;
  RunResult r = kiln_cli(
      {"build", "--out", project.out().string(), "--json", project.path("result.json").string()},
      project.env());
  ASSERT_EQ(r.exit_code, 0) << r.output << r.error_output;
  EXPECT_NE(r.output.find("kiln build: "), std::string::npos) << r.output;
  std::map<std::string, json> jobs = project.jobs();
  ASSERT_GE(jobs.size(), 10u);
  auto machine = [](const fs::path& p) { return read_elf_machine(p).value_or(0); };
  for (const auto& [name, job] : jobs) {
    SCOPED_TRACE(name);
    if (job["status"] == "skipped") {
      EXPECT_NE(job["log"].get<std::string>().find("toolchain absent"), std::string::npos)
          << job.dump();
      std::printf("skipped %s: %s\n", name.c_str(), job["log"].get<std::string>().c_str());
      continue;
    }
    ASSERT_EQ(job["status"], "done") << job.dump();
    fs::path output = job["output"].get<std::string>();
    ASSERT_TRUE(fs::exists(output));
    std::string kind = job["kind"];
    if (kind == "shared" || kind == "object" || kind == "executable") {
      EXPECT_EQ(machine(output), name == "add_aarch64" ? 183 : 62) << output;
    } else if (kind == "static") {
      EXPECT_EQ(head(output, 8), "!<arch>\n");
    } else if (kind == "llvm-ir") {
      EXPECT_NE(read_file(output).find("define "), std::string::npos);
    } else if (kind == "cuda") {
      if (output.extension() == ".cubin") {
        EXPECT_EQ(machine(output), 190) << "EM_CUDA";
      } else if (output.extension() == ".fatbin") {
        EXPECT_EQ(head(output, 4), "\x50\xed\x55\xba");
      } else {
        EXPECT_NE(read_file(output).find(".entry"), std::string::npos);
      }
    } else if (kind == "rocm-co") {
      EXPECT_EQ(machine(output), 224) << "EM_AMDGPU";
    } else if (kind == "wasm") {
      EXPECT_EQ(head(output, 4), std::string("\0asm", 4));
    } else if (kind == "tar") {
      EXPECT_EQ(head(output, 2), "\x1f\x8b") << "a gzip-compressed tar";
    }
  }
  // The executable runs, linked against the static library made from tarred objects.
  if (jobs["main"]["status"] == "done") {
    RunResult ran = run({.argv = {jobs["main"]["output"].get<std::string>()}});
    EXPECT_EQ(ran.exit_code, 0);
    EXPECT_EQ(ran.output, "42\n");
  }
}

// The scenario: a hanging compiler, a crashing one, a compile error and twenty good jobs
// with -j2 --keep-going.
TEST(BuildCli, HangCrashErrorAndTwentyGoodJobs) {
  BuildProject project;
  std::string marker = fmt::format("{}", 900000 + ::getpid() % 99999);
  // It answers --version like gcc and hangs only when compiling: it is the compile that must be
  // killed at the job's timeout, not the probe before it.
  project.write(
      "hang-cc",
      "#!/bin/sh\ncase \"$1\" in --version) exec gcc --version;; esac\nexec sleep " + marker + "\n",
      true);
  project.write("crash-cc", "#!/bin/sh\nkill -SEGV $$\n", true);
  json jobs = json::array();
  for (int i = 0; i < 20; ++i) {
    jobs.push_back(
        c_job(fmt::format("good{}", i), fmt::format("int f{0}(void) {{ return {0}; }}", i)));
  }
  json hang = c_job("hang", "int h(void) { return 1; }");
  hang["cc"] = project.path("hang-cc").string();
  hang["timeout"] = 2;
  json crash = c_job("crash", "int c(void) { return 1; }");
  crash["cc"] = project.path("crash-cc").string();
  jobs.insert(jobs.begin() + 3, hang);
  jobs.insert(jobs.begin() + 7, crash);
  jobs.push_back(c_job("broken", "int broken(void) { return }"));
  project.manifest({{"jobs", jobs}});

  RunResult r = project.build({"-j2", "--keep-going"});
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  std::map<std::string, json> result = project.jobs();
  for (int i = 0; i < 20; ++i) {
    const json& good = result[fmt::format("good{}", i)];
    EXPECT_EQ(good["status"], "done") << good.dump();
    EXPECT_EQ(read_elf_machine(good["output"].get<std::string>()), 62);
  }
  const json& h = result["hang"];
  EXPECT_EQ(h["status"], "timeout") << h.dump();
  EXPECT_NE(h["log"].get<std::string>().find("timed out after"), std::string::npos) << h.dump();
  EXPECT_NE(h["log"].get<std::string>().find("Command line: "), std::string::npos) << h.dump();
  EXPECT_EQ(h["log"].get<std::string>().find("after 0s"), std::string::npos) << h.dump();
  EXPECT_GE(h["seconds"].get<double>(), 1.9) << "killed before its timeout";
  EXPECT_LT(h["seconds"].get<double>(), 60.0) << "not killed at its timeout";
  const json& c = result["crash"];
  EXPECT_EQ(c["status"], "crashed") << c.dump();
  EXPECT_NE(c["log"].get<std::string>().find("SIGSEGV"), std::string::npos) << c.dump();
  const json& b = result["broken"];
  EXPECT_EQ(b["status"], "failed") << b.dump();
  EXPECT_NE(b["log"].get<std::string>().find("Compilation error:"), std::string::npos);
  EXPECT_NE(b["log"].get<std::string>().find("error:"), std::string::npos);
  EXPECT_NE(b["log"].get<std::string>().find("Command line: "), std::string::npos);
  // Failures are printed in full.
  EXPECT_NE(r.output.find("FAILED: broken"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("20 done, 0 cached, 1 failed, 1 timed out, 1 crashed"), std::string::npos)
      << r.output;
  EXPECT_TRUE(processes_with("sleep " + marker).empty()) << "the hanging compiler survived";
  for (const auto& entry : fs::directory_iterator(project.out())) {
    EXPECT_FALSE(entry.path().filename().string().starts_with(".kiln-tmp"))
        << "left behind: " << entry.path();
  }
}

// A job whose toolchain is absent is skipped with the reason, and the build still succeeds.
TEST(BuildCli, AnAbsentToolchainIsSkippedNotFailed) {
  BuildProject project;
  json cross = c_job("cross", "int x(void) { return 1; }", "shared");
  cross["cc"] = "kiln-no-such-cross-gcc";
  json mac = c_job("mac", "int m(void) { return 1; }", "shared");
  mac["toolchain"] = "xcode";
  json dependant = {{"name", "bundle"}, {"kind", "tar"}, {"inputs", {"@cross"}}};
  project.manifest({{"jobs", {cross, mac, dependant, c_job("here", "int h(void) { return 1; }")}}});
  RunResult r = project.build();
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  std::map<std::string, json> result = project.jobs();
  EXPECT_EQ(result["cross"]["status"], "skipped");
  EXPECT_NE(result["cross"]["log"].get<std::string>().find("kiln-no-such-cross-gcc"),
            std::string::npos);
  EXPECT_EQ(result["bundle"]["status"], "skipped");
  EXPECT_EQ(result["here"]["status"], "done");
  if (!which("xcrun")) {
    EXPECT_EQ(result["mac"]["status"], "skipped");
    EXPECT_NE(result["mac"]["log"].get<std::string>().find("xcrun"), std::string::npos);
  }
  EXPECT_NE(r.output.find("skipped:\n  cross: toolchain absent"), std::string::npos) << r.output;
}

// gcc reports a crash of cc1 as an "internal compiler error" and exits 4: that is a crash too.
TEST(BuildCli, ACompilerReportingItsOwnCrashIsCrashed) {
  BuildProject project;
  project.write("ice-cc",
                "#!/bin/sh\necho 'x.c:1: internal compiler error: Segmentation fault' >&2\n"
                "exit 4\n",
                true);
  json ice = c_job("ice", "int i(void) { return 1; }");
  ice["cc"] = project.path("ice-cc").string();
  project.manifest({{"jobs", {ice}}});
  EXPECT_EQ(project.build().exit_code, 1);
  json job = project.jobs()["ice"];
  EXPECT_EQ(job["status"], "crashed") << job.dump();
  EXPECT_NE(job["log"].get<std::string>().find("internal compiler error"), std::string::npos);
}

TEST(BuildCli, DependenciesAndAFailureThatSkipsDependants) {
  BuildProject project;
  json jobs = {c_job("a", "int a(void) { return 1; }"),
               c_job("b", "int b(void) { return 2; }"),
               {{"name", "lib"}, {"kind", "static"}, {"inputs", {"@a", "@b"}}}};
  project.manifest({{"jobs", jobs}});
  RunResult r = project.build();
  ASSERT_EQ(r.exit_code, 0) << r.output << r.error_output;
  std::string archive = read_file(project.out() / "lib.a");
  EXPECT_EQ(archive.substr(0, 8), "!<arch>\n");
  EXPECT_NE(archive.find("a.o"), std::string::npos);
  EXPECT_NE(archive.find("b.o"), std::string::npos);

  jobs[1] = c_job("b", "int b(void) { return }");
  project.manifest({{"jobs", jobs}});
  r = project.build();
  EXPECT_EQ(r.exit_code, 1);
  std::map<std::string, json> result = project.jobs();
  EXPECT_EQ(result["b"]["status"], "failed");
  EXPECT_EQ(result["lib"]["status"], "skipped");
  EXPECT_NE(result["lib"]["log"].get<std::string>().find("\"b\""), std::string::npos)
      << result["lib"].dump();
}

// Every manifest error: exit 2, a message naming the job and key, and nothing run.
TEST(BuildCli, ManifestErrorsExitTwoBeforeAnythingRuns) {
  struct Case {
    json manifest;
    std::string expected;
  };
  json good = c_job("ok", "int ok(void) { return 0; }");
  std::vector<Case> cases = {
      {{{"jobs",
         {good,
          {{"name", "x"},
           {"kind", "object"},
           {"code", "int x;"},
           {"language", "c"},
           {"optoins", {"-O2"}}}}}},
       "key \"optoins\""},
      {{{"jobs", {good, {{"name", "x"}, {"kind", "dll"}, {"code", "int x;"}}}}}, "\"dll\""},
      {{{"jobs", {good, {{"name", "x"}, {"kind", "object"}, {"sources", {"missing.c"}}}}}},
       "missing.c"},
      {{{"jobs", {good, good}}}, "job \"ok\""},
      {{{"jobs",
         {good,
          {{"name", "p"}, {"kind", "tar"}, {"inputs", {"@q"}}},
          {{"name", "q"}, {"kind", "tar"}, {"inputs", {"@p"}}}}}},
       "->"},
  };
  for (const Case& c : cases) {
    BuildProject project;
    project.manifest(c.manifest);
    RunResult r = project.build();
    EXPECT_EQ(r.exit_code, 2) << c.manifest.dump() << "\n" << r.error_output;
    EXPECT_NE(r.error_output.find(c.expected), std::string::npos) << r.error_output;
    EXPECT_NE(r.error_output.find("job"), std::string::npos) << r.error_output;
    EXPECT_FALSE(fs::exists(project.out())) << "a job ran: " << c.manifest.dump();
  }
  BuildProject none;
  RunResult r = kiln_cli({"build", none.path("nonexistent.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.error_output;
  EXPECT_NE(r.error_output.find("nonexistent.json"), std::string::npos) << r.error_output;
}

TEST(BuildCli, ASecondRunIsCachedAndAChangeRebuildsExactlyItsJobs) {
  BuildProject project;
  project.write("a.c", "int a(void) { return 1; }\n");
  project.write("b.c", "#include \"b.h\"\nint b(void) { return B; }\n");
  project.write("b.h", "#define B 2\n");
  project.write("c.c", "int c(void) { return 3; }\n");
  project.manifest({{"jobs",
                     {{{"name", "a"}, {"kind", "object"}, {"sources", {"a.c"}}},
                      {{"name", "b"}, {"kind", "object"}, {"sources", {"b.c"}}},
                      {{"name", "lib"}, {"kind", "static"}, {"inputs", {"@a", "@b"}}},
                      {{"name", "solo"}, {"kind", "shared"}, {"sources", {"c.c"}}}}}});
  ASSERT_EQ(project.build().exit_code, 0);
  json first = project.result();
  for (const json& job : first["jobs"]) EXPECT_EQ(job["status"], "done") << job.dump();

  ASSERT_EQ(project.build().exit_code, 0);
  json second = project.result();
  for (const json& job : second["jobs"]) {
    EXPECT_EQ(job["status"], "cached") << job.dump();
    EXPECT_TRUE(job["command"].empty()) << "a cached job ran " << job["command"].dump();
  }
  std::printf("first run %.3f s, second (cached) run %.3f s\n",
              first["summary"]["seconds"].get<double>(),
              second["summary"]["seconds"].get<double>());
  // The header b.c includes changed: b and lib are rebuilt, nothing else.
  project.write("b.h", "#define B 20\n");
  ASSERT_EQ(project.build().exit_code, 0);
  std::map<std::string, json> third = project.jobs();
  EXPECT_EQ(third["a"]["status"], "cached");
  EXPECT_EQ(third["b"]["status"], "done");
  EXPECT_EQ(third["lib"]["status"], "done");
  EXPECT_EQ(third["solo"]["status"], "cached");

  // Two builds of the same manifest into the same output and cache at once both succeed.
  project.write("c.c", "int c(void) { return 30; }\n");
  auto other = std::async(std::launch::async, [&] { return project.build({"-j2"}); });
  RunResult mine = project.build_with({.args = {"-j2"}, .report = ""});
  RunResult theirs = other.get();
  EXPECT_EQ(mine.exit_code, 0) << mine.output << mine.error_output;
  EXPECT_EQ(theirs.exit_code, 0) << theirs.output << theirs.error_output;
  EXPECT_EQ(read_elf_machine(project.out() / "solo.so"), 62);
}

TEST(BuildCli, DistccLauncherSendsTheCompilesToTheDaemon) {
  testing::DistccDaemon daemon;
  if (!daemon.available()) GTEST_SKIP() << daemon.why();
  BuildProject project;
  project.manifest(
      {{"defaults", {{"cc", "gcc"}}},
       {"jobs",
        {c_job("x", "int x(void) { return 1; }"), c_job("y", "int y(void) { return 2; }")}}});
  RunResult r = project.build({"--launcher", "distcc", "--no-cache"}, daemon.client_env());
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  for (const auto& [name, job] : project.jobs()) {
    EXPECT_EQ(job["status"], "done") << job.dump();
    ASSERT_FALSE(job["command"].empty());
    EXPECT_NE(job["command"][0].get<std::string>().find("distcc gcc"), std::string::npos)
        << job["command"].dump();
    // Where it ran is distcc's own account (its client log), naming the daemon.
    std::string host = fmt::format("127.0.0.1:{}", daemon.port());
    EXPECT_EQ(job["ran"], "remote") << job.dump();
    EXPECT_EQ(job["engine"], "distcc");
    EXPECT_EQ(job["remote_hosts"], json::array({host}));
    EXPECT_EQ(job["ran_detail"], "distcc: compiled on " + host);
  }
  EXPECT_EQ(daemon.wait_for_log("COMPILE_OK", 2), 2u) << daemon.log();
}

// What kiln prints on a pseudo-terminal 40 columns wide, with TERM set to `term`.
std::string on_a_terminal(const BuildProject& project, testing::BuildOptions options,
                          const std::string& term, int& exit_code) {
  int master = -1;
  int slave = -1;
  winsize size{};
  size.ws_col = 40;
  size.ws_row = 24;
  if (::openpty(&master, &slave, nullptr, nullptr, &size) != 0) {
    ADD_FAILURE() << "openpty failed";
    return {};
  }
  options.env["TERM"] = term;
  pid_t pid = project.start(options, slave, slave);
  ::close(slave);
  std::string screen;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(master, buffer, sizeof buffer);
    if (n > 0) {
      screen.append(buffer, static_cast<size_t>(n));
    } else if (n == -1 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO once kiln closed the terminal
    }
  }
  ::close(master);
  exit_code = wait_exit(pid);
  return screen;
}

TEST(BuildCli, ProgressRewritesOneLineOnATerminalAndPrintsLinesOtherwise) {
  BuildProject project;
  json jobs = json::array();
  for (int i = 0; i < 6; ++i) {
    jobs.push_back(c_job(fmt::format("kernel_with_a_long_name_{}", i),
                         fmt::format("int k{0}(void) {{ return {0}; }}", i), "shared"));
  }
  project.manifest({{"jobs", jobs}});

  testing::BuildOptions options{.args = {"--no-cache"}, .report = ""};
  int exit_code = -1;
  std::string screen = on_a_terminal(project, options, "xterm", exit_code);
  EXPECT_EQ(exit_code, 0) << screen;
  EXPECT_NE(screen.find('\r'), std::string::npos) << screen;
  EXPECT_NE(screen.find("\x1b[K"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("] done shared"), std::string::npos)
      << "no per-job lines on a terminal: " << screen;
  EXPECT_NE(screen.find("kiln build: 6 done"), std::string::npos) << screen;
  // Each status line fits the terminal (the pty turns "\n" into "\r\n").
  size_t from = 0;
  while ((from = screen.find('\r', from)) != std::string::npos) {
    size_t end = screen.find_first_of("\r\n", from + 1);
    std::string line = screen.substr(from + 1, end == std::string::npos ? end : end - from - 1);
    if (line.starts_with("[")) {
      std::string visible = line.substr(0, line.find("\x1b["));
      EXPECT_LT(visible.size(), 40u) << visible;
    }
    from += 1;
  }

  // A terminal that cannot move the cursor (TERM=dumb): one plain line per job.
  std::string dumb = on_a_terminal(project, options, "dumb", exit_code);
  EXPECT_EQ(exit_code, 0) << dumb;
  EXPECT_EQ(testing::count_occurrences(dumb, "] done shared kernel_with_a_long_name_"), 6u) << dumb;
  EXPECT_EQ(dumb.find("\x1b["), std::string::npos) << dumb;

  // Not a terminal: one plain line per job.
  RunResult plain = project.build({"--no-cache"});
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_EQ(testing::count_occurrences(plain.output, "] done shared kernel_with_a_long_name_"), 6u)
      << plain.output;
  EXPECT_EQ(plain.output.find('\r'), std::string::npos);
  EXPECT_EQ(plain.output.find("\x1b["), std::string::npos);
}

TEST(BuildCli, TraceAndJsonDescribeWhatRan) {
  BuildProject project;
  project.manifest({{"jobs",
                     {c_job("one", "int one(void) { return 1; }"),
                      c_job("two", "int two(void) { return 2; }"),
                      c_job("bad", "int bad(void) { return }"),
                      {{"name", "lib"}, {"kind", "static"}, {"inputs", {"@one", "@two"}}}}}});
  RunResult r =
      project.build({"-j2", "--keep-going", "--trace", project.path("trace.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  json trace = json::parse(read_file(project.path("trace.json")));
  std::map<std::string, json> events;
  std::set<int> tracks;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      EXPECT_FALSE(events.contains(e["name"])) << "two events for " << e["name"];
      events[e["name"].get<std::string>()] = e;
      tracks.insert(e["tid"].get<int>());
      EXPECT_GE(e["dur"].get<long long>(), 0);
    }
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      EXPECT_TRUE(e["args"]["name"].is_string());
    }
  }
  EXPECT_EQ(events.size(), 4u);
  EXPECT_EQ(events["bad"]["args"]["status"], "failed");
  EXPECT_EQ(events["lib"]["args"]["status"], "done");
  EXPECT_LE(tracks.size(), 2u) << "one track per worker (-j2)";

  json result = project.result();
  EXPECT_EQ(result["summary"]["done"], 3);
  EXPECT_EQ(result["summary"]["failed"], 1);
  for (const json& job : result["jobs"]) {
    EXPECT_EQ(events[job["name"].get<std::string>()]["args"]["status"], job["status"]);
    if (job["status"] == "done") {
      EXPECT_TRUE(fs::exists(job["output"].get<std::string>()));
      EXPECT_FALSE(job["command"].empty());
      EXPECT_GE(job["seconds"].get<double>(), 0.0);
      EXPECT_FALSE(job["cached"].get<bool>());
    }
  }
}

TEST(BuildCli, CtrlCKillsEveryJobAndLeavesNoPartialOutput) {
  BuildProject project;
  std::string marker = fmt::format("{}", 800000 + ::getpid() % 99999);
  // Slow only when compiling: a compiler slow to answer --version is another test's subject.
  project.write(
      "slow-cc",
      "#!/bin/sh\ncase \"$1\" in --version) exec gcc --version;; esac\nexec sleep " + marker + "\n",
      true);
  json jobs = {c_job("quick", "int q(void) { return 1; }")};
  for (int i = 0; i < 4; ++i) {
    json slow = c_job(fmt::format("slow{}", i), "int s(void) { return 1; }");
    slow["cc"] = project.path("slow-cc").string();
    slow["timeout"] = 0;
    jobs.push_back(slow);
  }
  project.manifest({{"jobs", jobs}});
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  pid_t pid = project.start({.args = {"-j2", "--keep-going"}}, devnull, devnull);
  ::close(devnull);
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (processes_with("sleep " + marker).size() < 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(processes_with("sleep " + marker).size(), 2u) << "two slow jobs should be running";
  auto sent = std::chrono::steady_clock::now();
  ::kill(pid, SIGINT);
  int status = wait_exit(pid);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  std::printf("kiln exited %.3f s after SIGINT\n", seconds);
  EXPECT_EQ(status, 130);
  EXPECT_LT(seconds, 10.0) << "not prompt";
  EXPECT_TRUE(processes_with("sleep " + marker).empty()) << "a job process survived Ctrl-C";
  EXPECT_FALSE(fs::exists(project.path("result.json"))) << "no report of an interrupted build";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(project.out(), ec)) {
    std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "quick.o") << "partial or unexpected output: " << name;
  }
}

// An executable job is linked as a program whatever its name: "tool.so" is not a library.
TEST(BuildCli, AnExecutableJobIsAProgramWhateverItsName) {
  BuildProject project;
  project.write("main.c", "#include <stdio.h>\nint main(void) { puts(\"ran\"); return 0; }\n");
  project.manifest(
      {{"jobs", {{{"name", "tool.so"}, {"kind", "executable"}, {"sources", {"main.c"}}}}}});
  RunResult r = project.build({"--no-cache"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  RunResult ran = run({.argv = {(project.out() / "tool.so").string()}});
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ran.output, "ran\n");
}

// A cross job whose toolchain runs but whose target C library is missing says so, in one line
// that names the package, beside the linker's own words.
TEST(BuildCli, ACrossJobWithoutItsTargetLibcNamesThePackage) {
  if (!which("clang") || !which("ld.lld")) GTEST_SKIP() << "clang or ld.lld is not installed";
  if (fs::exists("/usr/arm-linux-gnueabihf/lib/crti.o")) {
    GTEST_SKIP() << "libc6-dev-armhf-cross is installed: no target without its libc to try";
  }
  BuildProject project;
  project.write("main.c", "int main(void) { return 0; }\n");
  project.manifest({{"jobs",
                     {{{"name", "m_armhf"},
                       {"kind", "executable"},
                       {"sources", {"main.c"}},
                       {"cc", "clang"},
                       {"options", {"--target=armv7-linux-gnueabihf", "-fuse-ld=lld"}}}}}});
  RunResult r = project.build({"--no-cache"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::string log = project.jobs()["m_armhf"]["log"];
  EXPECT_NE(log.find("crti.o"), std::string::npos) << log;
  EXPECT_NE(log.find("the C library for armv7-linux-gnueabihf (its headers, crt1.o, crti.o, libc) "
                     "is not installed: on Debian, `apt-get install libc6-dev-armhf-cross`\n"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("kiln:"), log.rfind("kiln:")) << "only kiln's one line: " << log;
}

}  // namespace
}  // namespace kiln
