#include "kiln/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/file_lock.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

using namespace std::chrono_literals;
using testing::child_argv;

TEST(Process, HeaderExampleRunsAndChecks) {
  RunResult r = run({.argv = {"/bin/echo", "hello"}, .timeout = std::chrono::seconds(5)});
  ASSERT_TRUE(r.ok()) << r.status_text();
  EXPECT_EQ(r.output, "hello\n");
  EXPECT_EQ(r.command_line, "/bin/echo hello");
  EXPECT_GT(r.duration.count(), 0);
}

TEST(Process, TimeoutKillsChildAndGrandchildThatIgnoresSigterm) {
  auto start = std::chrono::steady_clock::now();
  // Long enough for both to start and say so under a sanitizer on a loaded machine (at 700 ms an
  // AddressSanitizer child beside two builds had not yet started its grandchild).
  constexpr auto kTimeout = 3s;
  RunResult r = run({.argv = child_argv("tree"), .timeout = kTimeout});
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.signal, 0) << r.status_text();
  EXPECT_LT(elapsed, kTimeout + 1s);
  EXPECT_NE(r.status_text().find("timed out"), std::string::npos);

  std::istringstream lines(r.output);
  std::string who;
  pid_t pid = 0;
  std::map<std::string, pid_t> pids;
  while (lines >> who >> pid) pids[who] = pid;
  ASSERT_EQ(pids.size(), 2u) << "output: " << r.output;
  // SIGKILL is delivered at once but the kernel tears a process down asynchronously.
  EXPECT_TRUE(testing::wait_process_gone(pids["child"], 1000));
  EXPECT_TRUE(testing::wait_process_gone(pids["grandchild"], 1000))
      << "the grandchild that ignores SIGTERM survived";
}

TEST(Process, DrainsLargeOutputOnBothStreamsWithoutDeadlock) {
  constexpr long kSize = 64L * 1024 * 1024;
  RunResult r = run({.argv = child_argv("spew", {std::to_string(kSize)}),
                     .merge_stderr = false,
                     .timeout = 120s});
  ASSERT_TRUE(r.ok()) << r.status_text();
  ASSERT_EQ(r.output.size(), static_cast<size_t>(kSize));
  ASSERT_EQ(r.error_output.size(), static_cast<size_t>(kSize));
  EXPECT_EQ(r.output.find_first_not_of('o'), std::string::npos);
  EXPECT_EQ(r.error_output.find_first_not_of('e'), std::string::npos);
}

TEST(Process, ChildInheritsNoDescriptorBeyondStdio) {
  TempDirectory dir;
  FileLock lock(dir / "held.lock");  // kiln's own descriptors, open while the child starts
  RunResult r = run({.argv = child_argv("fds"), .stdin_data = "x", .merge_stderr = false});
  ASSERT_TRUE(r.ok()) << r.error_output;
  EXPECT_EQ(r.output, "") << "descriptors leaked into the child";
}

TEST(Process, ChildDoesNotInheritTheHostsInheritableDescriptors) {
  int leaky = ::open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  ASSERT_GE(leaky, 3);
  RunResult r = run({.argv = child_argv("fds")});
  ::close(leaky);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.output, "");
}

TEST(Process, MergedStderrGoesToOutput) {
  RunResult r = run({.argv = child_argv("print", {"out;", "err;", "3"})});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output, "out;err;");
  EXPECT_EQ(r.error_output, "");
}

TEST(Process, MissingProgramIsToolNotFoundNamingItAndPath) {
  try {
    run({.argv = {"kiln-no-such-program-4711"}, .env = {{"PATH", "/nowhere:/usr/bin"}}});
    FAIL() << "expected ToolNotFound";
  } catch (const ToolNotFound& e) {
    EXPECT_EQ(e.tool(), "kiln-no-such-program-4711");
    EXPECT_NE(std::string(e.what()).find("kiln-no-such-program-4711"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("PATH=/nowhere:/usr/bin"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run({.argv = {"/no/such/dir/tool"}}), ToolNotFound);
}

TEST(Process, NonExecutableFileIsToolNotExecutable) {
  TempDirectory dir;
  std::filesystem::path file = dir / "data.txt";
  std::ofstream(file) << "not a program";
  ::chmod(file.c_str(), 0644);
  try {
    run({.argv = {file.string()}});
    FAIL() << "expected ToolNotExecutable";
  } catch (const ToolNotExecutable& e) {
    EXPECT_NE(std::string(e.what()).find("not an executable file"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos);
  }
}

TEST(Process, DirectoryIsToolNotExecutableSayingSo) {
  TempDirectory dir;
  try {
    run({.argv = {dir.path().string()}});
    FAIL() << "expected ToolNotExecutable";
  } catch (const ToolNotExecutable& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

TEST(Process, EnvironmentOverlaySetsAndUnsets) {
  ::setenv("KILN_TEST_INHERITED", "from-parent", 1);
  RunResult inherited = run({.argv = child_argv("env", {"KILN_TEST_INHERITED"})});
  EXPECT_EQ(inherited.output, "from-parent");
  RunResult set =
      run({.argv = child_argv("env", {"KILN_TEST_NEW"}), .env = {{"KILN_TEST_NEW", "v=1"}}});
  EXPECT_EQ(set.output, "v=1");
  RunResult unset = run({.argv = child_argv("env", {"KILN_TEST_INHERITED"}),
                         .env = {{"KILN_TEST_INHERITED", std::nullopt}}});
  EXPECT_EQ(unset.output, "<unset>");
  ::unsetenv("KILN_TEST_INHERITED");
}

TEST(Process, EnvironmentReplacementInheritsNothing) {
  ::setenv("KILN_TEST_INHERITED", "from-parent", 1);
  RunResult r = run({.argv = child_argv("env", {"KILN_TEST_INHERITED"}),
                     .env = {{"ONLY", "this"}},
                     .replace_env = true});
  EXPECT_EQ(r.output, "<unset>");
  RunResult only =
      run({.argv = child_argv("env", {"ONLY"}), .env = {{"ONLY", "this"}}, .replace_env = true});
  EXPECT_EQ(only.output, "this");
  ::unsetenv("KILN_TEST_INHERITED");
}

TEST(Process, InvalidEnvironmentNameIsRejected) {
  EXPECT_THROW(run({.argv = {"/bin/true"}, .env = {{"A=B", "x"}}}), InvalidArgument);
}

TEST(Process, WorkingDirectory) {
  TempDirectory dir;
  RunResult r = run({.argv = child_argv("cwd"), .cwd = dir.path()});
  EXPECT_EQ(std::filesystem::canonical(r.output), std::filesystem::canonical(dir.path()));
  EXPECT_THROW(run({.argv = {"/bin/true"}, .cwd = dir / "missing"}), InvalidArgument);
}

TEST(Process, RelativeProgramIsFoundFromTheChildsWorkingDirectory) {
  TempDirectory dir;
  std::filesystem::copy_file("/bin/echo", dir / "tool");
  ::chmod((dir / "tool").c_str(), 0755);
  std::filesystem::path relative_dir = std::filesystem::relative(dir.path());
  ASSERT_TRUE(relative_dir.is_relative());
  for (const auto& cwd : {dir.path(), relative_dir}) {
    RunResult r = run({.argv = {"./tool", "found"}, .cwd = cwd});
    EXPECT_TRUE(r.ok()) << cwd;
    EXPECT_EQ(r.output, "found\n");
  }
  EXPECT_THROW(run({.argv = {"./tool"}}), ToolNotFound) << "without cwd, ./tool is ours";
}

TEST(Process, StdinPassthroughIncludingLargeInput) {
  std::string input(size_t{3} * 1024 * 1024 + 17, 'x');
  input[5] = '\0';
  RunResult r = run({.argv = child_argv("echo-stdin"), .stdin_data = input});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.output, input);
  RunResult none = run({.argv = child_argv("echo-stdin")});
  EXPECT_EQ(none.output, "");
}

TEST(Process, ChildThatIgnoresStdinDoesNotKillTheHost) {
  // The child exits without reading; writing the rest must give EPIPE, not SIGPIPE.
  std::string input(size_t{8} * 1024 * 1024, 'y');
  RunResult r = run({.argv = child_argv("exit", {"0"}), .stdin_data = input});
  EXPECT_TRUE(r.ok());
}

TEST(Process, ExitCodes) {
  for (int code : {0, 1, 2, 42, 255}) {
    RunResult r = run({.argv = child_argv("exit", {std::to_string(code)})});
    EXPECT_EQ(r.exit_code, code);
    EXPECT_EQ(r.signal, 0);
    EXPECT_EQ(r.ok(), code == 0);
  }
}

TEST(Process, DeathBySignalIsReportedAsSuch) {
  RunResult r = run({.argv = child_argv("signal", {std::to_string(SIGSEGV)})});
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status_text(), "killed by signal SIGSEGV");
  EXPECT_EQ(r.ending(), Ending::signaled(SIGSEGV));
}

TEST(Process, CheckRaisesToolFailedWithTheSeedsMessage) {
  try {
    check("Compilation error:", {.argv = child_argv("print", {"bad.c:1: error\n", "", "1"})});
    FAIL() << "expected ToolFailed";
  } catch (const ToolFailed& e) {
    std::string expected = "Compilation error:\nbad.c:1: error\n\nCommand line: " +
                           format_command_line(child_argv("print", {"bad.c:1: error\n", "", "1"}));
    EXPECT_EQ(std::string(e.what()), expected);
    EXPECT_EQ(e.label(), "Compilation error:");
    EXPECT_EQ(e.status(), "");
    EXPECT_EQ(e.ending(), Ending::exited(1));
  }
}

TEST(Process, CheckReportsSignalAndTimeoutInTheMessage) {
  try {
    check("AR error:", {.argv = child_argv("signal", {std::to_string(SIGABRT)})});
    FAIL();
  } catch (const ToolFailed& e) {
    EXPECT_EQ(e.status(), "killed by signal SIGABRT");
    EXPECT_EQ(e.ending(), Ending::signaled(SIGABRT));
    EXPECT_NE(std::string(e.what()).find("killed by signal SIGABRT\nCommand line: "),
              std::string::npos);
  }
  try {
    check("Tar error:", {.argv = child_argv("sleep", {"5000"}), .timeout = 100ms});
    FAIL();
  } catch (const ToolFailed& e) {
    EXPECT_TRUE(e.status().starts_with("timed out after")) << e.status();
    EXPECT_EQ(e.ending(), Ending::timed_out());
  }
  EXPECT_EQ(check("x", {.argv = {"/bin/echo", "ok"}}).output, "ok\n");
}

TEST(Process, FormatCommandLineQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(format_command_line({"gcc", "-O2", "-o", "out.so"}), "gcc -O2 -o out.so");
  EXPECT_EQ(format_command_line({"echo", "a b", "", "it's"}), "echo 'a b' '' 'it'\\''s'");
}

TEST(Process, SignalNames) {
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(1000), "signal 1000");
}

TEST(Process, EmptyArgvIsInvalid) { EXPECT_THROW(run({}), InvalidArgument); }

TEST(Process, ManyThreadsLeaveNoDescriptorsOrChildrenBehind) {
  // Warm up lazily opened descriptors (e.g. by the C library) before counting.
  run({.argv = {"/bin/true"}});
  std::vector<int> fds_before = testing::open_fds();
  std::vector<pid_t> children_before = testing::child_pids();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&failures, t] {
      for (int i = 0; i < 50; ++i) {
        RunResult r = run({.argv = {"/bin/echo", std::to_string(t * 100 + i)}, .timeout = 30s});
        if (!r.ok() || r.output != std::to_string(t * 100 + i) + "\n") ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(testing::open_fds(), fds_before);
  EXPECT_EQ(testing::child_pids(), children_before) << "a zombie or a stray child is left";
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// A RunScope's deadline caps a run without a timeout of its own, and the scope records it.
TEST(RunScope, DeadlineCapsRunsAndIsRecorded) {
  RunScope scope({.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300)});
  RunResult r = run({.argv = {"sleep", "30"}});
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.duration, std::chrono::seconds(5));
  RunResult late = run({.argv = {"true"}});
  EXPECT_TRUE(late.timed_out) << "past the deadline nothing starts";
  ASSERT_EQ(scope.runs().size(), 2u);
  EXPECT_EQ(scope.runs()[0].command_line, "sleep 30");
  EXPECT_EQ(scope.runs()[0].ending, Ending::timed_out());
}

// What a run printed is recorded too (kiln build keeps a successful job's warnings), stderr after
// stdout when they were apart; and whoever compiles in-process records its compile the same way.
TEST(RunScope, RecordsWhatEachRunPrinted) {
  RunScope scope({});
  run({.argv = {"sh", "-c", "echo to-stdout; echo to-stderr >&2"}, .merge_stderr = false});
  scope.record_in_process(
      {.command_line = "nvrtc k.cu", .ending = Ending::exited(0), .output = "a warning\n"});
  ASSERT_EQ(scope.runs().size(), 2u);
  EXPECT_EQ(scope.runs()[0].output, "to-stdout\nto-stderr\n");
  EXPECT_FALSE(scope.runs()[0].in_process);
  EXPECT_EQ(scope.runs()[1].output, "a warning\n");
  EXPECT_EQ(scope.runs()[1].command_line, "nvrtc k.cu");
  EXPECT_TRUE(scope.runs()[1].in_process);
}

// Writing to the cancel descriptor kills the running child from another thread's point of view
// at once, and nothing starts afterwards; scopes nest and restore.
TEST(RunScope, CancelKillsTheRunningChild) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  std::thread canceller([w = fds[1]] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(::write(w, "x", 1), 1);
  });
  {
    RunScope scope({.cancel_fd = fds[0]});
    EXPECT_EQ(RunScope::current(), &scope);
    RunResult r = run({.argv = {"sleep", "30"}});
    EXPECT_TRUE(r.cancelled);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status_text(), "cancelled");
    EXPECT_LT(r.duration, std::chrono::seconds(5));
    EXPECT_TRUE(run({.argv = {"true"}}).cancelled);
    EXPECT_NE(testing::error_of([] {
                check("Compilation error:", {.argv = {"true"}});
              }).find("cancelled"),
              std::string::npos);
  }
  EXPECT_EQ(RunScope::current(), nullptr);
  EXPECT_TRUE(run({.argv = {"true"}}).ok());
  canceller.join();
  ::close(fds[0]);
  ::close(fds[1]);
}

// A timeout the clock cannot hold (start + milliseconds::max() overflows the nanosecond clock)
// is no limit: the run is not "timed out after 0s".
TEST(Process, ATimeoutBeyondTheClockIsNoLimit) {
  for (auto timeout : {std::chrono::milliseconds::max(),
                       std::chrono::milliseconds(std::chrono::hours(24 * 365 * 300))}) {
    RunResult r = run({.argv = {"true"}, .timeout = timeout});
    EXPECT_TRUE(r.ok()) << r.status_text();
  }
}

// A timeout's message names the limit that ended the run: the run's own, or its scope's when that
// came first (kiln build: the job's, saying where it was set), or "the caller's deadline".
TEST(Process, ATimeoutNamesTheLimitThatEndedIt) {
  RunResult own = run({.argv = child_argv("sleep", {"5000"}), .timeout = 100ms});
  ASSERT_TRUE(own.timed_out);
  EXPECT_TRUE(own.status_text().ends_with(" (its limit of 0.1s)")) << own.status_text();
  {
    RunScope scope({.deadline = std::chrono::steady_clock::now() + 100ms,
                    .deadline_of = "job \"k\"'s limit of 0.1s, --timeout"});
    RunResult capped = run({.argv = child_argv("sleep", {"5000"}), .timeout = 5s});
    ASSERT_TRUE(capped.timed_out);
    EXPECT_TRUE(capped.status_text().ends_with(" (job \"k\"'s limit of 0.1s, --timeout)"))
        << capped.status_text();
    try {
      check("Compilation error:", {.argv = child_argv("sleep", {"5000"})});
      FAIL() << "the scope's deadline has passed";
    } catch (const ToolFailed& e) {
      EXPECT_NE(e.status().find("job \"k\"'s limit"), std::string::npos) << e.status();
    }
  }
  RunScope unnamed({.deadline = std::chrono::steady_clock::now() + 100ms});
  RunResult r = run({.argv = child_argv("sleep", {"5000"})});
  EXPECT_TRUE(r.status_text().ends_with(" (the caller's deadline)")) << r.status_text();
}

}  // namespace
}  // namespace kiln
