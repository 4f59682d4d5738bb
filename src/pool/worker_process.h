// One worker process as the parent sees it. Several calls may be in flight at once (the worker
// answers them in order); the process is started and fed without ever blocking, so one event
// loop (the Executor's) can drive many of them, and Worker drives one with wait(). Not
// thread-safe.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "begin_board.h"
#include "frame.h"
#include "internal/fd.h"
#include "internal/spawn.h"
#include "kiln/pool.h"
#include "outcome.h"

namespace kiln::internal {

class WorkerProcess {
 public:
  // Receives the outcome of each call that ended, oldest first.
  using Ended = std::function<void(Outcome)>;

  explicit WorkerProcess(pool::WorkerOptions options) : options_(std::move(options)) {}
  ~WorkerProcess() { stop(); }
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
  int response_fd() const noexcept { return responses_.get(); }
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
  // Past the deadline: kills the process; the oldest call gets a TimeoutError and the rest are
  // dropped as by read_available. Returns the number dropped.
  std::size_t expire_if_overdue(Clock::time_point now, const Ended& ended);
  // Blocks until the oldest call in flight ends; for Worker, which has one at a time.
  Outcome wait();

  // Kills the process (its whole group) and forgets everything in flight.
  void stop() noexcept;
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
  // Handles one answer; returns false when it ended the process (then *dropped is set).
  bool on_answer(Value answer, const Ended& ended, std::size_t* dropped);
  // Stops the process and gives the oldest call `outcome`. Returns the number of calls dropped.
  std::size_t fail(Outcome::Kind kind, std::string message, const Ended& ended);
  std::size_t died(const Ended& ended);
  // "task 'x'", "initializer 'x'" or "start", for messages.
  std::string doing() const;

  pool::WorkerOptions options_;
  std::optional<Child> child_;
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
  Clock::time_point oldest_began_{};
  // With a preparation_timeout: the end of the oldest call's preparation, until its task began.
  std::optional<Clock::time_point> preparation_deadline_;
  std::optional<Clock::duration> typical_call_time_;
};

}  // namespace kiln::internal
