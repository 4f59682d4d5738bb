// One worker process as the parent sees it: start, send a call, collect the answer without
// blocking (for the Executor's event loop) or blocking (for Worker). Not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "internal/fd.h"
#include "internal/spawn.h"
#include "kiln/pool.h"
#include "pool/frame.h"

namespace kiln::internal {

class WorkerProcess {
 public:
  explicit WorkerProcess(pool::WorkerOptions options) : options_(std::move(options)) {}
  ~WorkerProcess() { stop(); }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Recycles the process when it reached max_uses or died, starts one if needed (running the
  // initializer), and writes the call. Its deadline is `timeout` from now, counted after any
  // start; the caller enforces it through deadline()/expire(), or by wait().
  void begin_call(std::string_view task, const Value& args,
                  std::optional<std::chrono::milliseconds> timeout);
  // The descriptor that becomes readable when the answer (or the worker's death) arrives.
  int response_fd() const noexcept { return responses_.get(); }
  std::optional<Clock::time_point> deadline() const noexcept { return deadline_; }
  bool busy() const noexcept { return busy_; }
  // Reads what is available without blocking. Returns the result once complete; throws
  // TaskError, ChildProcessError or ProtocolError (the last two after killing the worker).
  std::optional<Value> read_available();
  // Blocks until the answer or the deadline (then kills the worker and throws TimeoutError).
  Value wait();
  // Kills the worker (its whole group) and throws TimeoutError for the call in flight.
  [[noreturn]] void expire();

  void stop() noexcept;
  bool running() const noexcept { return child_.has_value(); }
  Child* child() noexcept { return child_ ? &*child_ : nullptr; }
  pid_t pid() const noexcept { return child_ ? child_->pid() : 0; }

 private:
  void start();
  void write_request(const std::string& op, std::string_view task, const Value& args);
  std::optional<Value> take_response();
  [[noreturn]] void died();

  pool::WorkerOptions options_;
  std::optional<Child> child_;
  UniqueFd requests_;
  UniqueFd responses_;
  FrameDecoder decoder_;
  int uses_ = 0;
  bool busy_ = false;
  std::string task_;
  std::optional<Clock::time_point> deadline_;
};

}  // namespace kiln::internal
