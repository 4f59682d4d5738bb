// The Executor: one dispatcher thread drives every worker process through one poll loop.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <mutex>
#include <thread>

#include "internal/fd.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "pool/worker_process.h"

namespace kiln::pool {
namespace {

using internal::Clock;

// How a job ended, as plain data: the exception the caller sees is made in the caller's own thread
// (see Executor::submit), so no exception object is ever shared between threads. (Sharing one
// goes through reference counts inside libstdc++ that ThreadSanitizer cannot see.)
struct Outcome {
  enum Kind { kValue, kTimeout, kChildDied, kProtocol, kTask, kOther } kind = kValue;
  Value value;
  std::string type;     // kTask: the task's exception type
  std::string message;  // everything but kValue
};

struct Job {
  std::string task;
  Value args;
  std::promise<Outcome> promise;
};

void settle(Job& job, Outcome outcome) {
  try {
    job.promise.set_value(std::move(outcome));
  } catch (const std::future_error&) {  // NOLINT(bugprone-empty-catch): already satisfied
  }
}

// The error in flight, as an Outcome.
Outcome outcome_of_current() {
  try {
    throw;
  } catch (const TimeoutError& e) {
    return {Outcome::kTimeout, nullptr, {}, e.what()};
  } catch (const ChildProcessError& e) {
    return {Outcome::kChildDied, nullptr, {}, e.what()};
  } catch (const ProtocolError& e) {
    return {Outcome::kProtocol, nullptr, {}, e.what()};
  } catch (const TaskError& e) {
    return {Outcome::kTask, nullptr, e.type_name(), e.message()};
  } catch (const std::exception& e) {
    return {Outcome::kOther, nullptr, {}, e.what()};
  } catch (...) {
    return {Outcome::kOther, nullptr, {}, "unknown error in the pool"};
  }
}

// The result for the caller, or the exception the outcome stands for.
Value unwrap(Outcome outcome) {
  switch (outcome.kind) {
    case Outcome::kValue:
      return std::move(outcome.value);
    case Outcome::kTimeout:
      throw TimeoutError(outcome.message);
    case Outcome::kChildDied:
      throw ChildProcessError(outcome.message);
    case Outcome::kProtocol:
      throw ProtocolError(outcome.message);
    case Outcome::kTask:
      throw TaskError(outcome.type, outcome.message);
    case Outcome::kOther:
      break;
  }
  throw Error(outcome.message);
}

}  // namespace

struct Executor::State {
  ExecutorOptions options;
  std::mutex mutex;  // guards queue, stopping, abandon
  std::deque<Job> queue;
  bool stopping = false;      // no new submissions; the loop ends when the work is done
  bool abandon = false;       // shutdown(false): fail what is queued, kill what runs
  internal::UniqueFd wake;    // eventfd: submit() and shutdown() nudge the loop
  std::mutex shutdown_mutex;  // serializes shutdown() callers
  std::thread dispatcher;
  // Owned by the dispatcher thread once it runs.
  std::vector<std::unique_ptr<internal::WorkerProcess>> workers;
  std::vector<std::optional<Job>> running;
  std::vector<pollfd> poll_fds;

  // Queues the jobs under one lock with one wake-up; their outcomes in the same order.
  std::vector<std::future<Outcome>> enqueue(std::vector<Job> jobs);
  void notify() const {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake.get(), &one, sizeof one);
  }
  bool take_work();
  void start_call(size_t i);
  void wait_for_events();
  void collect(size_t i);
  void expire_overdue();
  void loop();
};

// Hands queued jobs to idle workers. Returns false when the loop should end: the pool is
// stopping and has no work left, or it is abandoning its work (shutdown(false)).
bool Executor::State::take_work() {
  std::deque<Job> dropped;
  std::vector<size_t> started;
  bool abandoning = false;
  {
    std::lock_guard lock(mutex);
    abandoning = abandon;
    if (abandoning) dropped.swap(queue);
    for (size_t i = 0; i < workers.size() && !abandoning && !queue.empty(); ++i) {
      if (running[i]) continue;
      running[i] = std::move(queue.front());
      queue.pop_front();
      started.push_back(i);
    }
  }
  if (abandoning) {
    const Outcome shut{
        Outcome::kOther, nullptr, {}, "the pool was shut down before the task finished"};
    for (Job& job : dropped) settle(job, shut);
    for (size_t i = 0; i < workers.size(); ++i) {
      if (!running[i]) continue;
      workers[i]->stop();
      settle(*running[i], shut);
      running[i].reset();
    }
    return false;
  }
  for (size_t i : started) start_call(i);
  bool busy =
      std::any_of(running.begin(), running.end(), [](const auto& r) { return r.has_value(); });
  std::lock_guard lock(mutex);
  return !(stopping && queue.empty() && !busy);
}

void Executor::State::start_call(size_t i) {
  try {
    workers[i]->begin_call(running[i]->task, running[i]->args, options.timeout);
  } catch (...) {
    settle(*running[i], outcome_of_current());
    running[i].reset();
  }
}

void Executor::State::wait_for_events() {
  std::vector<pollfd>& fds = poll_fds;  // reused: no allocation per round
  fds.assign(1, {wake.get(), POLLIN, 0});
  std::optional<Clock::time_point> soonest;
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!running[i]) continue;
    fds.push_back({workers[i]->response_fd(), POLLIN, 0});
    if (auto d = workers[i]->deadline(); d && (!soonest || *d < *soonest)) soonest = d;
  }
  int timeout_ms = -1;
  if (soonest) {
    auto left = *soonest - Clock::now();
    timeout_ms = left <= Clock::duration::zero()
                     ? 0
                     : static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
  }
  internal::retry_eintr([&] { return ::poll(fds.data(), fds.size(), timeout_ms); });
  if (fds[0].revents != 0) {
    std::uint64_t count = 0;
    [[maybe_unused]] ssize_t n = ::read(wake.get(), &count, sizeof count);
  }
  size_t k = 1;
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!running[i]) continue;
    if (fds[k++].revents != 0) collect(i);
  }
}

void Executor::State::collect(size_t i) {
  try {
    if (std::optional<Value> result = workers[i]->read_available()) {
      settle(*running[i], {Outcome::kValue, std::move(*result), {}, {}});
      running[i].reset();
    }
  } catch (...) {
    settle(*running[i], outcome_of_current());
    running[i].reset();
  }
}

void Executor::State::expire_overdue() {
  auto now = Clock::now();
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!running[i]) continue;
    auto deadline = workers[i]->deadline();
    if (!deadline || *deadline > now) continue;
    try {
      workers[i]->expire();
    } catch (...) {
      settle(*running[i], outcome_of_current());
      running[i].reset();
    }
  }
}

void Executor::State::loop() {
  while (take_work()) {
    wait_for_events();
    expire_overdue();
  }
  for (auto& worker : workers) worker->stop();
}

Executor::Executor(ExecutorOptions options) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.options = std::move(options);
  int count = s.options.workers > 0
                  ? s.options.workers
                  : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  for (int i = 0; i < count; ++i) {
    s.workers.push_back(std::make_unique<internal::WorkerProcess>(s.options.worker));
  }
  s.running.resize(s.workers.size());
  s.wake.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s.wake) throw SystemError("eventfd", errno);
  s.dispatcher = std::thread([&s] { s.loop(); });
}

Executor::~Executor() { shutdown(false); }

std::vector<std::future<Outcome>> Executor::State::enqueue(std::vector<Job> jobs) {
  std::vector<std::future<Outcome>> outcomes;
  outcomes.reserve(jobs.size());
  for (Job& job : jobs) outcomes.push_back(job.promise.get_future());
  {
    std::lock_guard lock(mutex);
    if (stopping) throw Error("submit: the pool has been shut down");
    for (Job& job : jobs) queue.push_back(std::move(job));
  }
  notify();  // once for the whole batch
  return outcomes;
}

std::future<Value> Executor::submit(std::string task, Value args) {
  std::vector<Job> jobs(1);
  jobs[0].task = std::move(task);
  jobs[0].args = std::move(args);
  std::future<Outcome> outcome = std::move(state_->enqueue(std::move(jobs)).front());
  // Deferred: unwrap() runs in the thread that calls get(), so the exception is made there.
  return std::async(std::launch::deferred,
                    [outcome = std::move(outcome)]() mutable { return unwrap(outcome.get()); });
}

std::vector<MapResult> Executor::map_with_error_catching(const std::string& task,
                                                         const std::vector<Value>& items) {
  std::vector<Job> jobs(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    jobs[i].task = task;
    jobs[i].args = items[i];
  }
  std::vector<std::future<Outcome>> outcomes = state_->enqueue(std::move(jobs));
  std::vector<MapResult> results;
  results.reserve(items.size());
  for (std::future<Outcome>& f : outcomes) {
    Outcome o = f.get();
    switch (o.kind) {
      case Outcome::kValue:
        results.push_back({StatusKind::COMPLETE, std::move(o.value)});
        break;
      case Outcome::kTimeout:
        results.push_back({StatusKind::TIMEOUT, std::move(o.message)});
        break;
      case Outcome::kTask:
        results.push_back({StatusKind::EXCEPTION, o.type + ": " + o.message});
        break;
      default:
        results.push_back({StatusKind::EXCEPTION, std::move(o.message)});
        break;
    }
  }
  return results;
}

void Executor::shutdown(bool wait) {
  State& s = *state_;
  std::lock_guard serial(s.shutdown_mutex);
  {
    std::lock_guard lock(s.mutex);
    s.stopping = true;
    if (!wait) s.abandon = true;
  }
  s.notify();
  if (s.dispatcher.joinable()) s.dispatcher.join();
}

}  // namespace kiln::pool
