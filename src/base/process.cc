#include "kiln/process.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstring>

#include <fmt/format.h>

#include "internal/deadline.h"
#include "internal/fd.h"
#include "internal/spawn.h"
#include "kiln/error.h"

namespace kiln {
namespace {

using internal::Clock;
using internal::UniqueFd;

constexpr size_t kReadChunk = size_t{64} * 1024;
// After the group was killed, how long to wait for the pipes to reach EOF. Only a process that
// left the group (setsid) can hold them open longer; its output is then cut off.
constexpr std::chrono::milliseconds kDrainAfterKill{100};

// One parent-side pipe end the loop reads into a string.
struct Sink {
  UniqueFd fd;
  std::string* text;
};

// Reads what is available; closes the end at EOF or on error. Returns false when closed.
bool drain(Sink& sink) {
  char buffer[kReadChunk];
  for (;;) {
    ssize_t n = internal::retry_eintr([&] { return ::read(sink.fd.get(), buffer, sizeof buffer); });
    if (n > 0) {
      sink.text->append(buffer, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof buffer) return true;
      continue;
    }
    if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    sink.fd.reset();  // EOF, or an error no retry will fix
    return false;
  }
}

// Writes the next piece of stdin; closes the end when all is written or the child stopped reading.
void feed(UniqueFd& fd, const std::string& data, size_t& offset) {
  while (offset < data.size()) {
    long n = internal::write_without_sigpipe(fd.get(), data.data() + offset, data.size() - offset);
    if (n > 0) {
      offset += static_cast<size_t>(n);
      continue;
    }
    if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    break;  // EPIPE: the child closed its stdin; what it did not read is its business
  }
  fd.reset();
}

// The pipes and the state of one run.
struct Session {
  std::array<Sink, 2> sinks;  // stdout, stderr (stderr's fd is invalid when merged)
  UniqueFd stdin_fd;
  size_t stdin_offset = 0;
  const std::string* stdin_data = nullptr;

  bool pipes_open() const { return sinks[0].fd || sinks[1].fd || stdin_fd; }

  // One poll round over the open pipes and, while the child runs, its exit descriptor. Returns
  // after any event or at the deadline.
  void poll_once(internal::Child& child, bool exited, std::optional<Clock::time_point> deadline,
                 int cancel_fd = -1) {
    std::array<pollfd, 5> fds{};
    nfds_t n = 0;
    if (cancel_fd >= 0) fds[n++] = {cancel_fd, POLLIN, 0};
    for (Sink& s : sinks) {
      if (s.fd) fds[n++] = {s.fd.get(), POLLIN, 0};
    }
    if (stdin_fd) fds[n++] = {stdin_fd.get(), POLLOUT, 0};
    bool watch_exit = !exited && child.exit_fd() >= 0;
    if (watch_exit) fds[n++] = {child.exit_fd(), POLLIN, 0};
    std::optional<Clock::time_point> until = deadline;
    if (!exited && !watch_exit && n == 0) {
      // No pidfd and no pipe left to wake us: look again in a millisecond.
      auto soon = Clock::now() + std::chrono::milliseconds(1);
      until = until ? std::min(*until, soon) : soon;
    }
    int r = internal::poll_until(fds.data(), n, until);
    if (r == -1) throw SystemError("poll", errno);
    for (Sink& s : sinks) {
      if (s.fd) drain(s);
    }
    if (stdin_fd) feed(stdin_fd, *stdin_data, stdin_offset);
  }

  // After the group was killed: read what is still buffered, up to a short bound.
  void drain_after_kill(internal::Child& child) {
    auto until = Clock::now() + kDrainAfterKill;
    stdin_fd.reset();
    while ((sinks[0].fd || sinks[1].fd) && Clock::now() < until) poll_once(child, true, until);
  }
};

// The pipes of one run: made before the spawn and mapped onto the child's 0, 1 and 2 in `spec`;
// after the spawn, the parent's ends become a Session.
class ChildPipes {
 public:
  ChildPipes(const RunOptions& options, internal::SpawnSpec& spec) : out_(internal::make_pipe()) {
    spec.fds.emplace_back(out_.write.get(), 1);
    if (options.merge_stderr) {
      spec.fds.emplace_back(out_.write.get(), 2);
    } else {
      err_ = internal::make_pipe();
      spec.fds.emplace_back(err_->write.get(), 2);
    }
    if (options.stdin_data) {
      in_ = internal::make_pipe();
      spec.fds.emplace_back(in_->read.get(), 0);
    }
  }

  // Closes the child's ends here (the child has its copies; closing ours is what lets EOF
  // arrive) and returns the parent's ends, non-blocking, reading into `result`.
  Session into_session(const RunOptions& options, RunResult& result) {
    Session session;
    out_.write.reset();
    session.sinks[0] = {std::move(out_.read), &result.output};
    session.sinks[1].text = &result.error_output;
    if (err_) {
      err_->write.reset();
      session.sinks[1].fd = std::move(err_->read);
    }
    if (in_) {
      in_->read.reset();
      session.stdin_fd = std::move(in_->write);
      session.stdin_data = &*options.stdin_data;
    }
    for (Sink& sink : session.sinks) {
      if (sink.fd) internal::set_nonblocking(sink.fd.get());
    }
    if (session.stdin_fd) internal::set_nonblocking(session.stdin_fd.get());
    return session;
  }

 private:
  internal::Pipe out_;
  std::optional<internal::Pipe> err_;
  std::optional<internal::Pipe> in_;
};

void fill_status(RunResult& result, int wait_status) {
  if (WIFEXITED(wait_status)) {
    result.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    result.signal = WTERMSIG(wait_status);
  }
}

void check_cwd(const std::filesystem::path& cwd) {
  if (cwd.empty()) return;
  struct stat st {};
  if (::stat(cwd.c_str(), &st) != 0) {
    throw InvalidArgument(
        fmt::format("working directory '{}': {}", cwd.string(), std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw InvalidArgument(fmt::format("working directory '{}' is not a directory", cwd.string()));
  }
}

// The deadline of a run started at `start`: its own timeout's or the scope's, whichever comes
// first; `limit` gets that one's words for RunResult::limit.
std::optional<Clock::time_point> deadline_of_run(const RunOptions& options, const RunScope* scope,
                                                 Clock::time_point start, std::string& limit) {
  std::optional<Clock::time_point> deadline;
  if (options.timeout) {
    deadline = internal::deadline_after<Clock>(start, *options.timeout);
    limit = fmt::format("its limit of {:.3g}s",
                        std::chrono::duration<double>(*options.timeout).count());
  }
  if (scope == nullptr) return deadline;
  if (auto d = scope->limits().deadline; d && (!deadline || *d < *deadline)) {
    deadline = d;
    limit = scope->limits().deadline_words();
  }
  return deadline;
}

}  // namespace

RunResult run(const RunOptions& options) {
  if (options.argv.empty()) throw InvalidArgument("run: empty argument vector");
  auto start = Clock::now();
  RunScope* scope = RunScope::current();
  RunResult result;
  std::optional<Clock::time_point> deadline = deadline_of_run(options, scope, start, result.limit);
  int cancel_fd = scope != nullptr ? scope->limits().cancel_fd : -1;

  result.command_line = format_command_line(options.argv);
  check_cwd(options.cwd);
  // Cancelled or out of time already: start nothing.
  if ((scope != nullptr && scope->cancelled()) || (deadline && start >= *deadline)) {
    (scope != nullptr && scope->cancelled() ? result.cancelled : result.timed_out) = true;
    if (scope != nullptr) scope->record(result);
    return result;
  }
  internal::SpawnSpec spec;
  spec.environment = internal::make_environment(options.env, options.replace_env);
  spec.executable = internal::resolve_executable(options.argv[0],
                                                 internal::path_of(spec.environment), options.cwd);
  spec.argv = options.argv;
  spec.cwd = options.cwd;

  ChildPipes pipes(options, spec);
  internal::Child child = internal::Child::spawn(spec);
  Session session = pipes.into_session(options, result);

  // Run until the child has exited and its pipes reached EOF, or the deadline.
  for (;;) {
    bool exited = child.has_exited();
    if (exited && !session.pipes_open()) break;
    if (deadline && Clock::now() >= *deadline) {
      result.timed_out = true;
      break;
    }
    if (scope != nullptr && scope->cancelled()) {
      result.cancelled = true;
      break;
    }
    session.poll_once(child, exited, deadline, cancel_fd);
  }
  if (result.cancelled) {
    child.terminate_group(std::chrono::milliseconds(0));
    session.drain_after_kill(child);
  } else if (result.timed_out) {
    child.terminate_group(options.kill_grace);
    session.drain_after_kill(child);
  } else {
    child.reap();
  }
  fill_status(result, child.wait_status());
  result.duration = child.reaped_at() - start;
  if (scope != nullptr) scope->record(result);
  return result;
}

namespace {
thread_local RunScope* current_scope = nullptr;
}  // namespace

RunScope::RunScope(Limits limits) : limits_(std::move(limits)), outer_(current_scope) {
  current_scope = this;
}

RunScope::~RunScope() { current_scope = outer_; }

RunScope* RunScope::current() noexcept { return current_scope; }

bool RunScope::cancelled() const { return internal::readable(limits_.cancel_fd); }

void RunScope::record_in_process(Record compile) {
  compile.in_process = true;
  runs_.push_back(std::move(compile));
}

void RunScope::record(const RunResult& result) {
  runs_.push_back(
      {result.command_line, result.ending(), result.duration, result.output + result.error_output});
}

RunResult check(std::string_view label, const RunOptions& options) {
  RunResult result = run(options);
  if (result.ok()) return result;
  throw tool_failed(label, result);
}

ToolFailed tool_failed(std::string_view label, const RunResult& result) {
  return tool_failed(label, result.output + result.error_output, result);
}

ToolFailed tool_failed(std::string_view label, std::string output, const RunResult& result) {
  Ending ending = result.ending();
  std::string status = ending.kind == Ending::Kind::exited ? "" : result.status_text();
  return {std::string(label), std::move(output), result.command_line, ending, std::move(status)};
}

Ending RunResult::ending() const noexcept {
  if (cancelled) return Ending::cancelled();
  if (timed_out) return Ending::timed_out();
  if (signal != 0) return Ending::signaled(signal);
  return Ending::exited(exit_code);
}

std::string Ending::text() const {
  switch (kind) {
    case Kind::exited:
      break;
    case Kind::signaled:
      return fmt::format("killed by signal {}", signal_name(value));
    case Kind::timed_out:
      return "timed out";
    case Kind::cancelled:
      return "cancelled";
  }
  return fmt::format("exit code {}", value);
}

std::string RunResult::status_text() const {
  if (cancelled) return "cancelled";
  if (timed_out) {
    std::string text =
        fmt::format("timed out after {:.3g}s", std::chrono::duration<double>(duration).count());
    return limit.empty() ? text : text + " (" + limit + ")";
  }
  if (signal != 0) return fmt::format("killed by signal {}", signal_name(signal));
  return fmt::format("exit code {}", exit_code);
}

std::string format_command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& arg : argv) {
    if (!line.empty()) line += ' ';
    bool plain = !arg.empty() && arg.find_first_not_of(
                                     "abcdefghijklmnopqrstuvwxyz"
                                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789_-+=/.,:@%") == std::string::npos;
    if (plain) {
      line += arg;
      continue;
    }
    line += '\'';
    for (char c : arg) {
      if (c == '\'') {
        line += "'\\''";
      } else {
        line += c;
      }
    }
    line += '\'';
  }
  return line;
}

std::string signal_name(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return fmt::format("signal {}", signal);
  return fmt::format("SIG{}", abbrev);
}

}  // namespace kiln
