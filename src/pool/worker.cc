// kiln::pool::Worker: one worker process driven by the caller's thread (the seed's PopenWorker).
#include <unistd.h>

#include <optional>

#include "internal/deadline.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "outcome.h"
#include "worker_process.h"

namespace kiln::pool {

struct Worker::State {
  explicit State(WorkerOptions options) : process(std::move(options)) {}
  // The process, as this process's: in a child forked from the one that made this Worker, the
  // parent's worker and call are forgotten first, so that the child starts a worker of its own.
  internal::WorkerProcess& own() noexcept {
    process.leave_parents_process();
    if (owner != ::getpid()) {
      owner = ::getpid();
      ended.reset();
    }
    return process;
  }

  void send(std::string_view task, const Value& args,
            std::optional<std::chrono::milliseconds> timeout, bool args_outlive_write) {
    internal::WorkerProcess& p = own();
    if (p.calls_in_flight() > 0 || ended) {
      throw InvalidState(
          "Worker::send: the previous call's result was not received (recv() it first)");
    }
    p.send(task, args, timeout, args_outlive_write);
    p.flush();
  }

  internal::WorkerProcess process;
  // How the call in flight ended, once wait_for() saw it and until recv() takes it.
  std::optional<internal::Outcome> ended;
  pid_t owner = ::getpid();
};

Worker::Worker(WorkerOptions options) : state_(std::make_unique<State>(std::move(options))) {}
Worker::~Worker() = default;
Worker::Worker(Worker&&) noexcept = default;
Worker& Worker::operator=(Worker&&) noexcept = default;

void Worker::send(std::string_view task, const Value& args,
                  std::optional<std::chrono::milliseconds> timeout) {
  state_->send(task, args, timeout, false);  // `args` may be gone before it is sent
}

bool Worker::wait_for(std::chrono::milliseconds timeout) {
  internal::WorkerProcess& process = state_->own();
  if (state_->ended || process.calls_in_flight() == 0) return true;
  state_->ended =
      process.wait(internal::deadline_after<internal::Clock>(internal::Clock::now(), timeout));
  return state_->ended.has_value();
}

Value Worker::recv() {
  internal::WorkerProcess& process = state_->own();
  if (std::optional<internal::Outcome> ended = std::exchange(state_->ended, std::nullopt)) {
    return internal::unwrap(std::move(*ended));
  }
  if (process.calls_in_flight() == 0) throw InvalidState("Worker::recv: no call was sent");
  return internal::unwrap(std::move(*process.wait()));
}

Value Worker::call(std::string_view task, const Value& args,
                   std::optional<std::chrono::milliseconds> timeout) {
  state_->send(task, args, timeout, true);  // `args` lives until recv() returns
  return recv();
}

void Worker::kill() noexcept {
  internal::WorkerProcess& process = state_->own();
  process.stop();
  process.reap_dying(true);
  state_->ended.reset();
}

bool Worker::is_alive() {
  internal::WorkerProcess& process = state_->own();
  process.reap_dying(false);
  internal::Child* child = process.child();
  return child != nullptr && !child->has_exited();
}

bool Worker::join(std::chrono::milliseconds timeout) {
  internal::WorkerProcess& process = state_->own();
  internal::Child* child = process.child();
  if (child == nullptr) return true;
  bool exited = child->wait_exit_until(
      internal::deadline_after<internal::Clock>(internal::Clock::now(), timeout));
  // With a call in flight the process stays, for recv() to report how it ended.
  if (exited && process.calls_in_flight() == 0 && !state_->ended) process.stop();
  return exited;
}

pid_t Worker::pid() const noexcept {
  return state_->owner == ::getpid() ? state_->process.pid() : 0;
}

}  // namespace kiln::pool
