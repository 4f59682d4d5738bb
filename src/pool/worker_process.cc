// The parent side of one pool worker (the seed's PopenWorker).
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <future>
#include <mutex>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "cpu_wait.h"
#include "frame.h"
#include "internal/deadline.h"
#include "internal/fd.h"
#include "internal/spawn.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln/process.h"
#include "protocol.h"
#include "spawner.h"
#include "template.h"
#include "worker_process.h"

namespace kiln::internal {
namespace {

constexpr std::chrono::seconds kStartTimeout{60};
constexpr const char* kStartHint =
    "does the program's main() call kiln::pool::serve_if_worker() first?";
// An idle worker's outbox keeps at most this much memory.
constexpr std::size_t kKeptCapacity = std::size_t{256} * 1024;
// How long a worker whose answer pipe ended may take to exit before it is killed as mute: an
// exiting process closes its descriptors a moment before it can be waited for.
constexpr std::chrono::milliseconds kHangUpGrace{500};
// At most this many killed processes are left to die in the background per worker.
constexpr std::size_t kMaxDying = 8;
// A worker that exited is read from at most this many times more.
constexpr int kExitReads = 64;
// Past a call's deadline, a worker that is runnable but has had less than kFairShare of CPU
// since it was last looked at is starved, not slow: it is looked at again kStarvedStep later,
// until kStarvedGrace past the deadline. A worker that runs (a task spinning on the CPU) or
// sleeps is timed out at once.
constexpr std::chrono::milliseconds kStarvedStep{5};
constexpr std::chrono::milliseconds kStarvedGrace{500};
constexpr std::uint64_t kFairShareNs = 1'000'000;
// Where the kernel has no pidfd, how often a waiting Worker looks whether its worker exited.
constexpr std::chrono::milliseconds kExitCheck{50};

// The outcome of a well-formed error answer, [false, type, message (, details)].
Outcome task_error(Value& answer) {
  Outcome error{Outcome::Kind::task, nullptr, std::move(answer[1].get_ref<std::string&>()),
                std::move(answer[2].get_ref<std::string&>())};
  if (answer.size() == 4) {
    const auto& bytes = answer[3].get_binary();
    error.details.assign(bytes.begin(), bytes.end());
  }
  return error;
}

std::string describe_death(int wait_status) {
  if (WIFSIGNALED(wait_status)) return "killed by signal " + signal_name(WTERMSIG(wait_status));
  if (WIFEXITED(wait_status)) return fmt::format("exited with code {}", WEXITSTATUS(wait_status));
  return "ended";
}

UniqueFd open_output(const pool::WorkerOptions& options) {
  if (options.output == pool::Output::inherit) return UniqueFd();
  const char* path =
      options.output == pool::Output::discard ? "/dev/null" : options.output_file.c_str();
  int flags = options.output == pool::Output::discard ? O_WRONLY : O_WRONLY | O_CREAT | O_APPEND;
  UniqueFd fd(::open(path, flags | O_CLOEXEC, 0644));
  if (!fd) throw SystemError(fmt::format("open worker output '{}'", path), errno);
  return fd;
}

// This program's path as the kernel gives it, for argv[0]: without the " (deleted)" it reads
// once the file is gone.
std::string own_path() {
  std::error_code ec;
  std::string path = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
  return path.empty() ? "kiln-worker" : path;
}

// The program and arguments of a worker: this program re-executed, or options.command with the
// two arguments serve_worker() looks for. This program is executed as "/proc/self/exe": in the
// child, not yet exec'd, that is the parent's own executable, so the kernel runs the very file
// the parent runs. Its path would run whatever replaced it since (an upgrade in another
// terminal: a program that may not speak this protocol), or nothing once it was deleted.
void set_program(const pool::WorkerOptions& options, SpawnSpec& spec) {
  std::string parent = std::to_string(::getpid());
  if (options.command.empty()) {
    spec.executable = "/proc/self/exe";
    spec.argv = {own_path(), kWorkerFlag, parent};
    return;
  }
  spec.executable = resolve_executable(options.command[0], path_of(spec.environment), {});
  spec.argv = options.command;
  spec.argv.insert(spec.argv.end(), {kWorkerFlag, parent});
}

}  // namespace

void WorkerProcess::start() {
  reap_dying(!reap_in_background_);
  Pipe to_worker = make_pipe();
  Pipe from_worker = make_pipe();
  UniqueFd output = open_output(options_);
  BeginBoard board = BeginBoard::create();
  SpawnSpec spec;
  spec.environment = make_environment(options_.env, false);
  set_program(options_, spec);
  spec.fds = {{to_worker.read.get(), kRequestFd}, {from_worker.write.get(), kResponseFd}};
  spec.fds.emplace_back(board.fd(), kBoardFd);
  spec.fds.emplace_back(options_.stdout_fd.value_or(output ? output.get() : 1), 1);
  spec.fds.emplace_back(options_.stderr_fd.value_or(output ? output.get() : 2), 2);
  if (options_.from_template) child_ = fork_from_template(spec);
  if (!child_) child_ = Spawner::spawn(spec);
  board.close_fd();
  requests_ = std::move(to_worker.write);
  responses_ = std::move(from_worker.read);
  set_nonblocking(requests_.get());
  set_nonblocking(responses_.get());
  board_ = std::move(board);
  decoder_ = FrameDecoder();
  hang_up_deadline_.reset();
  uses_ = 0;
  requests_sent_ = 0;
  // The worker's "ready" is awaited like an answer: loading a large program can take longer than
  // a task's deadline, and a program that never calls serve_if_worker() must be a clear error.
  awaited_.push_back({Awaited::Kind::ready, {}, {}});
  begin_oldest(Clock::now());
  if (!options_.initializer.empty()) {
    try {
      outbox_.append_call(options_.initializer, options_.initializer_args, true);
    } catch (...) {
      stop();
      throw;
    }
    awaited_.push_back({Awaited::Kind::init, options_.initializer, {}, ++requests_sent_});
  }
}

void WorkerProcess::stop(bool reap_now) noexcept {
  if (child_ && reap_now) child_->terminate_group(std::chrono::milliseconds(0));
  if (child_ && !reap_now) {
    child_->signal_group(SIGKILL);
    if (dying_.size() >= kMaxDying) {  // a bound on what is left to the kernel (and on pidfds)
      dying_.front().terminate_group(std::chrono::milliseconds(0));
      dying_.erase(dying_.begin());
    }
    dying_.push_back(std::move(*child_));
  }
  child_.reset();
  board_ = BeginBoard();
  preparation_deadline_.reset();
  hang_up_deadline_.reset();
  starved_until_.reset();
  requests_.reset();
  responses_.reset();
  outbox_.clear();
  awaited_.clear();
  calls_ = 0;
  deadline_.reset();
}

void WorkerProcess::reap_dying(bool block) noexcept {
  std::erase_if(dying_, [block](Child& dying) {
    try {
      if (!block && !dying.has_exited()) return false;
    } catch (...) {  // not waitable: nothing left to wait for
    }
    dying.terminate_group(std::chrono::milliseconds(0));  // its group is killed, it is reaped
    return true;
  });
}

void WorkerProcess::leave_parents_process() noexcept {
  if (owner_ == ::getpid()) return;
  owner_ = ::getpid();
  stop();  // the parent's children are not ours: Child forgets them without a signal
  dying_.clear();
  typical_call_time_.reset();
}

bool WorkerProcess::accepts_call() const noexcept {
  if (calls_ == 0) return true;
  return child_.has_value() && (options_.max_uses <= 0 || uses_ < options_.max_uses);
}

void WorkerProcess::send(std::string_view task, const Value& args,
                         std::optional<std::chrono::milliseconds> timeout,
                         bool args_outlive_write) {
  if (calls_ == 0) {
    bool worn_out = options_.max_uses > 0 && uses_ >= options_.max_uses;
    if (child_ && (worn_out || child_->has_exited())) stop(!reap_in_background_);
    if (!child_) start();
  }
  try {
    outbox_.append_call(task, args, args_outlive_write);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(
        fmt::format("the arguments of task '{}' cannot be sent: {}", task, e.what()));
  }
  awaited_.push_back({Awaited::Kind::call, std::string(task), timeout, ++requests_sent_});
  ++calls_;
  ++uses_;
  if (awaited_.size() == 1) begin_oldest(Clock::now());
}

void WorkerProcess::flush() {
  while (!outbox_.empty()) {
    long n = outbox_.write_some(requests_.get(), true);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {  // the worker is gone; reading its answers reports how it ended
      outbox_.clear();
      return;
    }
  }
}

void WorkerProcess::begin_oldest(Clock::time_point now) {
  oldest_began_ = now;
  deadline_.reset();
  preparation_deadline_.reset();
  starved_until_.reset();
  if (awaited_.empty()) return;
  const Awaited& oldest = awaited_.front();
  if (oldest.kind == Awaited::Kind::ready) deadline_ = now + kStartTimeout;
  if (oldest.kind != Awaited::Kind::call) return;
  if (oldest.timeout) deadline_ = deadline_after<Clock>(now, *oldest.timeout);
  if (options_.preparation_timeout) {
    // The first check comes at the timeout (or the preparation's end, if sooner); each check
    // while the task prepares sets the next one a timeout later, so that the deadline is found
    // exactly once the task reports its beginning (see postpone_while_preparing).
    preparation_deadline_ = deadline_after<Clock>(now, *options_.preparation_timeout);
    if (preparation_deadline_ && (!deadline_ || *preparation_deadline_ < *deadline_)) {
      deadline_ = preparation_deadline_;
    }
  }
}

bool WorkerProcess::postpone_while_preparing(Clock::time_point now) {
  if (!options_.preparation_timeout || awaited_.empty()) return false;
  const Awaited& oldest = awaited_.front();
  if (oldest.kind != Awaited::Kind::call || !preparation_deadline_) return false;
  if (std::optional<Clock::time_point> began = board_.began(oldest.request)) {
    preparation_deadline_.reset();  // the task proper runs: its own timeout alone applies
    deadline_ = oldest.timeout ? deadline_after<Clock>(*began, *oldest.timeout) : std::nullopt;
  } else if (now < *preparation_deadline_) {
    std::optional<Clock::time_point> next;
    if (oldest.timeout) next = deadline_after<Clock>(now, *oldest.timeout);
    deadline_ = next && *next < *preparation_deadline_ ? next : preparation_deadline_;
  }
  return !deadline_ || *deadline_ > now;
}

bool WorkerProcess::postpone_while_starved(Clock::time_point now) {
  if (awaited_.empty() || awaited_.front().kind != Awaited::Kind::call) return false;
  std::optional<RunState> state = run_state(child_->pid());
  if (!state || !state->runnable) return false;
  if (!starved_until_) {
    starved_until_ = now + kStarvedGrace;  // runnable at its deadline: look again shortly
  } else if (now >= *starved_until_ || state->on_cpu_ns - on_cpu_ns_ >= kFairShareNs) {
    return false;  // it had its share of the CPU, or the grace is over
  }
  on_cpu_ns_ = state->on_cpu_ns;
  deadline_ = now + kStarvedStep;
  return true;
}

std::string WorkerProcess::doing() const {
  if (awaited_.empty()) return "idle";
  const Awaited& oldest = awaited_.front();
  switch (oldest.kind) {
    case Awaited::Kind::ready:
      return "starting";
    case Awaited::Kind::init:
      return fmt::format("running initializer '{}'", oldest.task);
    case Awaited::Kind::call:
      break;
  }
  return fmt::format("running task '{}'", oldest.task);
}

std::size_t WorkerProcess::fail(Outcome::Kind kind, std::string message, const Ended& ended,
                                bool reap_now, std::optional<Ending> ending) {
  std::size_t calls = calls_;
  stop(reap_now && !reap_in_background_);
  if (calls == 0) return 0;
  Outcome outcome = Outcome::error(kind, std::move(message));
  outcome.ending = ending;
  ended(std::move(outcome));
  return calls - 1;
}

bool WorkerProcess::exited() noexcept {
  try {
    return child_->has_exited();
  } catch (const Error&) {  // not waitable (the program ignores SIGCHLD): gone
    return true;
  }
}

std::size_t WorkerProcess::died(const Ended& ended) {
  std::string how = "ended";
  std::optional<Ending> ending;
  try {
    child_->signal_group(SIGKILL);  // what it left running in its group goes with it
    child_->reap();                 // it has exited: this does not wait
    int status = child_->wait_status();
    how = describe_death(status);
    if (WIFSIGNALED(status)) ending = Ending::signaled(WTERMSIG(status));
    if (WIFEXITED(status)) ending = Ending::exited(WEXITSTATUS(status));
  } catch (const Error&) {  // its status was taken (SIGCHLD ignored): how it ended is unknown
  }
  bool starting = !awaited_.empty() && awaited_.front().kind == Awaited::Kind::ready;
  std::string message =
      starting ? fmt::format("worker {} {} before it was ready: {}", pid(), how, kStartHint)
               : fmt::format("worker {} {} {}", pid(), doing(), how);
  return fail(Outcome::Kind::child_died, std::move(message), ended, true, ending);
}

std::size_t WorkerProcess::hung_up(const Ended& ended) {
  responses_.reset();  // nothing more can come, and polling it would report the end forever
  if (exited()) return died(ended);
  // It may be exiting (descriptors close before the process can be waited for), or its task
  // closed or replaced descriptor 4 and it lives on, mute: whichever, shortly.
  hang_up_deadline_ = Clock::now() + kHangUpGrace;
  deadline_ = hang_up_deadline_;
  return 0;
}

bool WorkerProcess::on_answer(Value answer, const Ended& ended, std::size_t* dropped) {
  if (answer.is_array() && answer.size() == 2 && answer[0].is_null() &&
      answer[1].is_number_integer()) {  // the exit notice: its task is ending the process
    std::string message =
        fmt::format("worker {} {} exited with code {}", pid(), doing(), answer[1].get<int>());
    // Reported now: a large process takes a while to end (tens of ms after importing TVM),
    // and no deadline may pass meanwhile. It is killed and reaped later.
    *dropped = fail(Outcome::Kind::child_died, std::move(message), ended, false,
                    Ending::exited(answer[1].get<int>()));
    return false;
  }
  bool well_formed = answer.is_array() && answer.size() >= 2 && answer[0].is_boolean();
  bool ok = well_formed && answer[0].get<bool>();
  if (well_formed && !ok) {
    well_formed = (answer.size() == 3 || (answer.size() == 4 && answer[3].is_binary())) &&
                  answer[1].is_string() && answer[2].is_string();
  }
  if (!well_formed || awaited_.empty()) {
    *dropped =
        fail(Outcome::Kind::protocol,
             fmt::format("worker protocol: worker {} sent {} while {}; it was killed", pid(),
                         well_formed ? "an answer nobody asked for" : "a bad answer", doing()),
             ended, true);
    return false;
  }
  Awaited::Kind kind = awaited_.front().kind;
  auto now = Clock::now();
  if (kind == Awaited::Kind::init && !ok) {  // the first call gets the initializer's error
    Outcome error = task_error(answer);
    std::size_t calls = calls_;
    stop(!reap_in_background_);
    if (calls > 0) ended(std::move(error));
    *dropped = calls > 0 ? calls - 1 : 0;
    return false;
  }
  if (kind == Awaited::Kind::call) {
    Clock::duration took = now - oldest_began_;
    typical_call_time_ = typical_call_time_ ? (*typical_call_time_ * 3 + took) / 4 : took;
  }
  awaited_.pop_front();
  begin_oldest(now);
  if (kind != Awaited::Kind::call) return true;
  if (--calls_ == 0 && decoder_.capacity() > kKeptCapacity) decoder_.release();
  ended(ok ? Outcome::of_value(std::move(answer[1])) : task_error(answer));
  return true;
}

WorkerProcess::Read WorkerProcess::read_once(const Ended& ended, std::size_t* dropped) {
  ssize_t n = decoder_.read_from(responses_.get());
  if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Read::again;
  for (;;) {
    std::optional<Value> answer;
    try {
      answer = decoder_.next();
    } catch (const ProtocolError& e) {
      *dropped = fail(Outcome::Kind::protocol,
                      fmt::format("{} (worker {} {}; it was killed)", e.what(), pid(), doing()),
                      ended, true);
      return Read::stopped;
    }
    if (!answer) break;
    if (!on_answer(std::move(*answer), ended, dropped)) return Read::stopped;
  }
  return n > 0 ? Read::data : Read::end;
}

std::size_t WorkerProcess::read_available(const Ended& ended) {
  if (!child_ || !responses_) return 0;
  std::size_t dropped = 0;
  if (read_once(ended, &dropped) == Read::end) return hung_up(ended);
  return dropped;
}

std::size_t WorkerProcess::on_exit(const Ended& ended) {
  if (!child_ || !exited()) return 0;
  // What it wrote before it exited is in the pipe (a worker cannot exit with more of an answer
  // unwritten than the pipe holds); what a grandchild holding the pipe may add is not waited for.
  std::size_t dropped = 0;
  for (int i = 0; responses_ && i < kExitReads; ++i) {
    Read r = read_once(ended, &dropped);
    if (r == Read::stopped) return dropped;
    if (r != Read::data) break;
  }
  return died(ended);
}

std::size_t WorkerProcess::expire_if_overdue(Clock::time_point now, const Ended& ended) {
  if (!deadline_ || *deadline_ > now) return 0;
  if (hang_up_deadline_) {
    if (exited()) return died(ended);
    return fail(Outcome::Kind::child_died,
                fmt::format("worker {} {} closed or replaced its answer pipe (descriptor {}) "
                            "and was killed",
                            pid(), doing(), kResponseFd),
                ended, true);
  }
  if (std::size_t dropped = read_available(ended); !child_ || !deadline_ || *deadline_ > now) {
    return dropped;  // what had arrived ended the call (its successor's deadline is later)
  }
  bool preparing = preparation_deadline_.has_value();
  if (postpone_while_preparing(now)) return 0;
  if (!preparation_deadline_ && postpone_while_starved(now)) return 0;
  const Awaited& oldest = awaited_.front();
  std::string message;
  if (oldest.kind != Awaited::Kind::call) {
    message = fmt::format("worker {} was not ready within {} s and was killed: {}", pid(),
                          kStartTimeout.count(), kStartHint);
  } else if (preparing && preparation_deadline_) {
    message = fmt::format(
        "task '{}' did not begin within its preparation limit of {} ms; its worker was killed",
        oldest.task, options_.preparation_timeout->count());
  } else {
    message = fmt::format("task '{}' timed out; its worker was killed", oldest.task);
  }
  // A timeout is reported as soon as the worker is killed, not once it has died: the caller
  // hears of its deadline within a fraction of a millisecond. Its reaping waits for the next use.
  return fail(Outcome::Kind::timeout, std::move(message), ended, false);
}

std::optional<Outcome> WorkerProcess::wait(std::optional<Clock::time_point> until) {
  std::optional<Outcome> result;
  auto ended = [&result](Outcome outcome) {
    if (!result) result = std::move(outcome);
  };
  // A RunScope on this thread (kiln build's job) caps the wait and may cancel it.
  RunScope* scope = RunScope::current();
  std::optional<Clock::time_point> scope_deadline;
  int cancel_fd = -1;
  if (scope != nullptr) {
    scope_deadline = scope->limits().deadline;
    cancel_fd = scope->limits().cancel_fd;
  }
  while (!result && calls_ > 0) {
    Clock::time_point now = Clock::now();
    expire_if_overdue(now, ended);
    if (result) break;
    if (scope_deadline && now >= *scope_deadline) {
      fail(Outcome::Kind::timeout,
           fmt::format("task '{}' ran past its deadline ({}); its worker was killed",
                       awaited_.empty() ? "" : awaited_.front().task,
                       scope->limits().deadline_words()),
           ended, false);
      break;
    }
    if (scope != nullptr && scope->cancelled()) {
      fail(Outcome::Kind::cancelled, "cancelled; the worker was killed", ended, true);
      break;
    }
    if (until && now >= *until) return std::nullopt;
    // A call that typically answers within kSpin is polled for before this thread sleeps.
    if (!wants_to_write() && responses_ && typical_call_time_ && *typical_call_time_ < kSpin &&
        spin_until_readable(responses_.get(), kSpin)) {
      read_available(ended);
      continue;
    }
    poll_once(until, scope_deadline, cancel_fd, ended);
  }
  if (!result) throw InvalidState("the pool worker has no call in flight");
  return result;
}

void WorkerProcess::poll_once(std::optional<Clock::time_point> until,
                              std::optional<Clock::time_point> scope_deadline, int cancel_fd,
                              const Ended& ended) {
  pollfd p[4] = {{responses_.get(), POLLIN, 0},
                 {wants_to_write() ? requests_.get() : -1, POLLOUT, 0},
                 {exit_fd(), POLLIN, 0},
                 {cancel_fd, POLLIN, 0}};
  std::optional<Clock::time_point> wake = deadline_;
  for (auto limit : {until, scope_deadline}) {
    if (limit && (!wake || *limit < *wake)) wake = limit;
  }
  if (exit_fd() < 0) {  // no pidfd: look every kExitCheck whether the worker exited
    auto check = Clock::now() + kExitCheck;
    if (!wake || check < *wake) wake = check;
  }
  if (poll_until(p, 4, wake) == -1) throw SystemError("poll", errno);
  if (p[1].revents != 0 && wants_to_write()) flush();
  if (p[0].revents != 0) read_available(ended);
  if (p[2].revents != 0 || exit_fd() < 0) on_exit(ended);
}

}  // namespace kiln::internal
