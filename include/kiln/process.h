// Running a tool: the one place where kiln starts processes.
//
// kiln::run() starts a program from an argument vector (never through a shell), feeds it stdin
// bytes, drains its stdout and stderr together in one poll loop (so a child writing megabytes
// to both never deadlocks), enforces a deadline, and returns what happened as data. A tool
// that runs and fails is a result, not an exception; kiln::check() turns a failure into
// kiln::ToolFailed with the seed's message. A program that cannot be started at all throws
// kiln::ToolNotFound or kiln::ToolNotExecutable.
//
//   kiln::RunResult r = kiln::run({.argv = {"gcc", "--version"}, .timeout =
//   std::chrono::seconds(5)}); if (r.ok()) std::cout << r.output;
//
//   // Throws kiln::ToolFailed("Compilation error:\n<output>\nCommand line: gcc -c bad.c").
//   kiln::check("Compilation error:", {.argv = {"gcc", "-c", "bad.c"}});
//
// run() returns once the child has exited and its stdout/stderr reached end-of-file; a descendant
// that keeps them open (a daemon the tool started) holds run() until it exits or the deadline.
// Each child runs in its own process group. On timeout the whole group receives SIGTERM, then
// SIGKILL after `kill_grace`, and the child is reaped: no zombie, no stray process in the group.
// Every descriptor kiln opens is close-on-exec, the child receives no descriptor but its stdin,
// stdout and stderr (not even ones the host left inheritable), and only the child's own pid is
// waited for, so run() is safe to call from many threads at once.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ending.h"
#include "kiln/error.h"

namespace kiln {

struct RunOptions {
  // The program and its arguments. argv[0] is looked up in PATH unless it contains a '/'
  // (PATH from `env` when it sets one, else kiln's own); a relative argv[0] with a '/' is
  // relative to `cwd`, as exec after chdir would see it.
  std::vector<std::string> argv{};
  // Working directory of the child; empty means kiln's own.
  std::filesystem::path cwd{};
  // Variables to set in the child's environment; std::nullopt unsets that variable.
  std::map<std::string, std::optional<std::string>> env{};
  // When true, the child's environment is exactly `env`, nothing inherited.
  bool replace_env = false;
  // Bytes written to the child's stdin; std::nullopt gives it /dev/null.
  std::optional<std::string> stdin_data{};
  // When true (the seed's behaviour) stderr goes to `output` together with stdout.
  bool merge_stderr = true;
  // Deadline for the whole run; std::nullopt waits as long as it takes.
  std::optional<std::chrono::milliseconds> timeout{};
  // How long the process group has between SIGTERM and SIGKILL once the deadline passed.
  std::chrono::milliseconds kill_grace{200};
};

struct RunResult {
  // The exit status when the child exited normally, else -1.
  int exit_code = -1;
  // The signal that ended the child, else 0.
  int signal = 0;
  // True when kiln ended the child because the deadline passed.
  bool timed_out = false;
  // When timed out: the limit that ended it, in words ("its limit of 5s", or the RunScope's
  // Limits::deadline_of when the scope's deadline came first), for status_text().
  std::string limit{};
  // True when kiln ended the child (or did not start it) because the RunScope's cancel
  // descriptor became readable.
  bool cancelled = false;
  // What the child wrote to stdout (and to stderr when merged).
  std::string output{};
  // What the child wrote to stderr when it was not merged.
  std::string error_output{};
  // Wall time from start to reaping.
  std::chrono::nanoseconds duration{0};
  // The command, quoted as a shell would need it, for messages.
  std::string command_line{};

  // True when the child exited with status 0 before the deadline.
  bool ok() const noexcept { return !timed_out && !cancelled && signal == 0 && exit_code == 0; }
  // The four fields above as one typed value: cancelled, else timed out, else the signal, else
  // the exit code.
  Ending ending() const noexcept;
  // "exit code 2", "killed by signal SIGSEGV", "timed out after 1.5s (its limit of 1.5s)", ...
  std::string status_text() const;
};

// Limits on every run() made by one thread while a RunScope lives, for work that calls library
// functions which run tools themselves (kiln build runs each job in one): the scope's deadline
// caps each run's own timeout, and when `cancel_fd` polls readable (a pipe or eventfd that stays
// readable once written, e.g. after Ctrl-C) the running child's group is killed at once and no
// further child is started. Pool workers (kiln/pool.h) waited on in the scope honour both too.
// The scope also records what ran, for reports. Scopes nest; the innermost one applies.
//
//   kiln::RunScope scope({.deadline = now + 60s, .cancel_fd = interrupted.read_fd()});
//   kiln::cc::create_shared("libadd.so", {"add.c"});   // killed at the deadline or on cancel
//   scope.runs();                                       // {{"gcc -shared ...", ...}}
class RunScope {
 public:
  struct Limits {
    std::optional<std::chrono::steady_clock::time_point> deadline{};
    int cancel_fd = -1;
    // What the deadline is, in words, for the message of a run it ends: "job \"k\"'s limit of
    // 60s (--timeout)". Empty: "the caller's deadline".
    std::string deadline_of{};

    // deadline_of, or "the caller's deadline" when it is empty: what every message says.
    std::string deadline_words() const {
      return deadline_of.empty() ? "the caller's deadline" : deadline_of;
    }
  };
  // One run() made in the scope: its command line, how it ended and what it printed (stdout,
  // then stderr when apart).
  struct Record {
    std::string command_line;
    Ending ending;
    std::chrono::nanoseconds duration{0};
    std::string output{};
    // A compile in kiln's own process (NVRTC; record_in_process()): no program ran, and the
    // command line is what a person would read for it.
    bool in_process = false;
  };

  explicit RunScope(Limits limits);
  ~RunScope();
  RunScope(const RunScope&) = delete;
  RunScope& operator=(const RunScope&) = delete;

  const Limits& limits() const noexcept { return limits_; }
  const std::vector<Record>& runs() const noexcept { return runs_; }
  // Whether the cancel descriptor is readable now.
  bool cancelled() const;
  // The scope of the calling thread, or nullptr.
  static RunScope* current() noexcept;
  // Called by run() for each child it ran.
  void record(const RunResult& result);
  // Called for each compile by a compiler that runs in kiln's process (NVRTC), so that reports
  // show it beside the tools that ran; `compile.in_process` is set here.
  void record_in_process(Record compile);

 private:
  Limits limits_;
  std::vector<Record> runs_;
  RunScope* outer_;
};

// Makes every process group run() and the pool start from now on die with this process, however
// it ends (SIGKILL too): a small guard process is forked that kills, when this process is gone,
// the groups it had started and not yet reaped. For main(), while the program has one thread
// (the kiln CLI calls it first thing). Throws SystemError when the guard cannot be started.
void guard_children();

// Runs a program to completion. Throws ToolNotFound / ToolNotExecutable when it cannot be
// started, InvalidArgument for an empty argv or a cwd that is not a directory, SystemError when
// the system refuses a resource (pipes, processes). Never throws for what the program does.
RunResult run(const RunOptions& options);

// Runs a program and returns its result when ok(). Otherwise throws tool_failed(label, result).
RunResult check(std::string_view label, const RunOptions& options);

// The ToolFailed for a run that did not end ok(): `label`, `output` (default: the run's output,
// stderr appended when it was not merged), the status line unless it simply exited non-zero
// ("killed by signal SIGSEGV", "timed out after 2s"), "Command line: <command>", and the run's
// ending().
ToolFailed tool_failed(std::string_view label, const RunResult& result);
ToolFailed tool_failed(std::string_view label, std::string output, const RunResult& result);

// The live descendants of process `pid` (children, their children, ...), parents before their
// children, read from /proc; empty when `pid` has none or does not exist. Zombies (exited,
// waiting to be reaped) are left out. InvalidArgument for pid <= 0.
std::vector<pid_t> descendant_processes(pid_t pid);

// tvm.support.popen_pool.kill_child_processes: sends SIGKILL to every descendant of `pid` (not
// to `pid` itself), looking again for ones forked meanwhile; returns how many were signalled.
// Nothing happens for a pid that does not exist (as the seed's). Walks /proc: no psutil. A
// descendant that another user owns, and kiln may not signal, is skipped.
// InvalidArgument for pid <= 0 (0 and -1 would mean every process).
size_t kill_child_processes(pid_t pid);

// The argument vector as one line, each argument quoted only when a shell would need it.
std::string format_command_line(const std::vector<std::string>& argv);

// The name of a signal ("SIGSEGV"), or "signal N" for one without a name.
std::string signal_name(int signal);

}  // namespace kiln
