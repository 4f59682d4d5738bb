// One worker process as the parent sees it. Several calls may be in flight at once (the worker
// answers them in order); the process is started and fed without ever blocking, so one event
// loop (the Executor's) can drive many of them, and Worker drives one with wait(). Not
// thread-safe.
//
// A worker's end is seen two ways, whichever comes first: its answer pipe reaching end of file,
// and its pidfd (exit_fd()) polling readable, for a worker that exited while something else
// (a grandchild it forked) holds the pipe open. A worker whose pipe ends while it lives on (its
// task closed or replaced descriptor 4) is given kHangUpGrace to exit, then killed and
// reported as crashed. Nothing here waits for a process that may not have exited, except where
// the caller asks for it (stop(true), reap_dying(true)).
#pragma once

#include <unistd.h>

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "begin_board.h"
#include "internal/fd.h"
#include "internal/spawn.h"
#include "kiln/pool.h"
#include "outbox.h"
#include "outcome.h"

namespace kiln::internal {

class WorkerProcess {
 public:
  // Receives the outcome of each call that ended, oldest first.
  using Ended = std::function<void(Outcome)>;

  // `reap_in_background`: the caller polls dying() and never wants to wait for a process to die
  // (the Executor's dispatcher); otherwise a process stopped for anything but a timeout is
  // reaped at once, and the next start reaps those left dying.
  explicit WorkerProcess(pool::WorkerOptions options, bool reap_in_background = false)
      : options_(std::move(options)), reap_in_background_(reap_in_background) {}
  ~WorkerProcess() {
    stop();
    reap_dying(true);
  }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Calls sent and not yet answered.
  std::size_t calls_in_flight() const noexcept { return calls_; }
  // True when send() may be called now: with nothing in flight always (send starts or restarts
  // the process as needed); otherwise while the process has uses left for one more call.
  bool accepts_call() const noexcept;
  // Queues a call; flush() writes it. With nothing in flight, first replaces a process that died
  // or reached max_uses and starts one if none runs, without waiting for it to be ready (its
  // "ready" and the initializer's answer are awaited like calls, but are not calls). The call's
  // deadline is `timeout` from when it becomes the oldest in flight, i.e. when the worker starts
  // it. Throws when the process cannot be started or the arguments exceed the frame limit.
  // `args_outlive_write`: `args` stays alive and unchanged until the call ends or stop(), so its
  // large strings are written from where they are instead of being copied.
  void send(std::string_view task, const Value& args,
            std::optional<std::chrono::milliseconds> timeout, bool args_outlive_write);
  // Writes queued requests without blocking.
  void flush();
  bool wants_to_write() const noexcept { return !outbox_.empty(); }
  int request_fd() const noexcept { return requests_.get(); }
  // -1 once the pipe has ended.
  int response_fd() const noexcept { return responses_.get(); }
  // Polls readable once the running process has exited; -1 when none runs or the kernel has no
  // pidfd (then call on_exit() every so often).
  int exit_fd() const noexcept { return child_ ? child_->exit_fd() : -1; }
  // When what the worker does now (starting, or the oldest call) runs out of time.
  std::optional<Clock::time_point> deadline() const noexcept { return deadline_; }
  // How long calls typically run on this worker: a moving average that weighs the last answered
  // call by 1/4; std::nullopt before the first answer.
  std::optional<Clock::duration> typical_call_time() const noexcept { return typical_call_time_; }

  // Reads what has arrived, without blocking, and reports each call that ended. When the
  // process died or broke the protocol, the oldest call in flight gets that error, the process
  // is stopped, and the calls behind it, which never started, are dropped: returns their number
  // (the caller re-sends them). Otherwise returns 0.
  std::size_t read_available(const Ended& ended);
  // When the process has exited (exit_fd() polled readable): reads what it wrote before, then
  // reports its death as read_available does. Does nothing while it runs.
  std::size_t on_exit(const Ended& ended);
  // Past the deadline: first reads what has arrived (an answer sent in time is not late because
  // the parent looked late), then kills the process; the oldest call gets a TimeoutError (or,
  // after its answer pipe ended, a ChildProcessError) and the rest are dropped as by
  // read_available. Returns the number dropped.
  std::size_t expire_if_overdue(Clock::time_point now, const Ended& ended);
  // Blocks until the oldest call in flight ends, or `until` passes (then std::nullopt, and the
  // call stays in flight); for Worker, which has one at a time.
  std::optional<Outcome> wait(std::optional<Clock::time_point> until = std::nullopt);

  // Kills the process (its whole group) and forgets everything in flight. `reap_now`: waits
  // until it is gone (a large process takes a millisecond or two to die, one in uninterruptible
  // sleep longer); otherwise it is left to reap_dying(), so that the end can be reported at once.
  void stop(bool reap_now = true) noexcept;
  // Reaps the processes stop(false) killed: each once it has died (or all, `block`ing).
  void reap_dying(bool block) noexcept;
  // Those processes: each one's exit_fd() polls readable once it has died (where it is -1, call
  // reap_dying() again after a while).
  const std::vector<Child>& dying() const noexcept { return dying_; }
  // In a process forked from the one that made this (which holds a copy of it): forgets the
  // parent's process and calls, without touching them, so that this process starts its own.
  void leave_parents_process() noexcept;
  Child* child() noexcept { return child_ ? &*child_ : nullptr; }
  pid_t pid() const noexcept { return child_ ? child_->pid() : 0; }

 private:
  // What an awaited frame answers.
  struct Awaited {
    enum class Kind { ready, init, call } kind;
    std::string task;
    std::optional<std::chrono::milliseconds> timeout;
    std::uint64_t request = 0;  // its number among the requests since the start (from 1)
  };

  void start();
  void begin_oldest(Clock::time_point now);
  // With a preparation_timeout, at the oldest call's deadline: moves the deadline to where the
  // call's own timeout ends, counted from when its task began (the board), or to the next check
  // while it prepares. Returns true when the deadline moved past `now`.
  bool postpone_while_preparing(Clock::time_point now);
  // At the oldest call's deadline: moves the deadline a little on while the worker waits for a
  // CPU it is not given (a loaded machine), up to a bound. Returns true when it moved.
  bool postpone_while_starved(Clock::time_point now);
  enum class Read { again, data, end, stopped };
  // One read from the answer pipe, and every answer it completes: `stopped` when one of them
  // ended the process (then *dropped is set), `end` at end of file or on a read error.
  Read read_once(const Ended& ended, std::size_t* dropped);
  // Handles one answer; returns false when it ended the process (then *dropped is set).
  bool on_answer(Value answer, const Ended& ended, std::size_t* dropped);
  // Stops the process (reaping it at once when `reap_now`, and the pool does not reap in the
  // background) and gives the oldest call `outcome`. Returns the number of calls dropped.
  std::size_t fail(Outcome::Kind kind, std::string message, const Ended& ended, bool reap_now,
                   std::optional<Ending> ending = std::nullopt);
  // Whether the process has exited (or cannot be waited for).
  bool exited() noexcept;
  // The process has exited: kills what it left in its group, reaps it, reports how it ended.
  std::size_t died(const Ended& ended);
  // The answer pipe ended: the process died, or lives on without it (see kHangUpGrace).
  std::size_t hung_up(const Ended& ended);
  // One poll for wait(), and what it found.
  void poll_once(std::optional<Clock::time_point> until,
                 std::optional<Clock::time_point> scope_deadline, int cancel_fd,
                 const Ended& ended);
  // "task 'x'", "initializer 'x'" or "start", for messages.
  std::string doing() const;

  pool::WorkerOptions options_;
  bool reap_in_background_ = false;
  pid_t owner_ = ::getpid();  // the process that made this
  std::optional<Child> child_;
  std::vector<Child> dying_;  // killed by stop(false), not yet reaped
  UniqueFd requests_;
  UniqueFd responses_;
  FrameDecoder decoder_;
  Outbox outbox_;
  std::deque<Awaited> awaited_;
  std::size_t calls_ = 0;
  int uses_ = 0;
  std::uint64_t requests_sent_ = 0;  // since the start
  BeginBoard board_;
  std::optional<Clock::time_point> deadline_;
  // Set when the answer pipe ended while the process still ran: when it is killed if still alive.
  std::optional<Clock::time_point> hang_up_deadline_;
  Clock::time_point oldest_began_{};
  // With a preparation_timeout: the end of the oldest call's preparation, until its task began.
  std::optional<Clock::time_point> preparation_deadline_;
  // Past the oldest call's deadline, while the worker waits for a CPU: when that grace ends, and
  // the worker's time on a CPU when it was last looked at.
  std::optional<Clock::time_point> starved_until_;
  std::uint64_t on_cpu_ns_ = 0;
  std::optional<Clock::duration> typical_call_time_;
};

}  // namespace kiln::internal
