// The Executor: one dispatcher thread drives every worker process through one poll loop.
//
// A worker whose calls prove quick is sent several at once, so that it finds its next request
// already in its pipe and the dispatcher reads many answers per wake-up: as many as it typically
// runs in kQueuedWork (at most kMaxDepth). A worker whose calls take kQueuedWork or longer gets one
// at a time, so a call that turns out slow holds little or no queued work hostage. Calls queued
// behind one that crashes or times out never started: they go back to the front of the queue.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "internal/fd.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "outcome.h"
#include "worker_process.h"

namespace kiln::pool {
namespace {

using internal::Clock;
using internal::Outcome;

constexpr std::size_t kMaxDepth = 64;
constexpr auto kQueuedWork = std::chrono::milliseconds(1);

// How many calls a worker whose calls typically take `typical` should have in flight.
std::size_t depth_for(std::optional<Clock::duration> typical) {
  if (!typical) return 1;  // nothing known yet
  auto ticks = std::max<Clock::rep>(1, typical->count());
  auto depth = static_cast<std::size_t>(Clock::duration(kQueuedWork).count() / ticks);
  return std::clamp<std::size_t>(depth, 1, kMaxDepth);
}

// The outcomes of one submission (one submit(), or one map_with_error_catching() call): the
// caller waits once for all of them, instead of once per job. A submit_each() batch hands each
// outcome to its callback instead.
struct Batch {
  explicit Batch(std::size_t size) : outcomes(size), remaining(size) {}
  explicit Batch(Executor::Ended callback) : remaining(0), ended(std::move(callback)) {}
  std::mutex mutex;
  std::condition_variable done;
  std::vector<Outcome> outcomes;
  std::size_t remaining;
  Executor::Ended ended;

  void wait() {
    std::unique_lock lock(mutex);
    done.wait(lock, [this] { return remaining == 0; });
  }
};

struct Job {
  std::string task;
  Value args;
  std::shared_ptr<Batch> batch;
  std::size_t index = 0;  // in batch->outcomes
};

void settle(Job& job, Outcome outcome) {
  Batch& batch = *job.batch;
  if (batch.ended) {
    batch.ended(job.index, [outcome = std::move(outcome)]() mutable {
      return internal::unwrap(std::move(outcome));
    });
    return;
  }
  std::lock_guard lock(batch.mutex);
  batch.outcomes[job.index] = std::move(outcome);
  if (--batch.remaining == 0) batch.done.notify_all();
}

// The error in flight, as an Outcome.
Outcome outcome_of_current() {
  try {
    throw;
  } catch (const TimeoutError& e) {
    return Outcome::error(Outcome::Kind::timeout, e.what());
  } catch (const ChildProcessError& e) {
    Outcome died = Outcome::error(Outcome::Kind::child_died, e.what());
    died.ending = e.ending();
    return died;
  } catch (const ProtocolError& e) {
    return Outcome::error(Outcome::Kind::protocol, e.what());
  } catch (const TaskError& e) {
    return {Outcome::Kind::task, nullptr, e.type_name(), e.message(), 0, e.details()};
  } catch (const Cancelled& e) {
    return Outcome::error(Outcome::Kind::cancelled, e.what());
  } catch (const InvalidArgument& e) {
    return Outcome::error(Outcome::Kind::invalid_argument, e.what());
  } catch (const SystemError& e) {
    return {Outcome::Kind::system, nullptr, e.operation(), e.what(), e.error_number()};
  } catch (const std::exception& e) {
    return Outcome::error(Outcome::Kind::other, e.what());
  } catch (...) {
    return Outcome::error(Outcome::Kind::other, "unknown error in the pool");
  }
}

}  // namespace

struct Executor::State {
  // One worker process and the jobs sent to it, oldest first.
  struct Slot {
    std::unique_ptr<internal::WorkerProcess> process;
    std::deque<Job> jobs;
  };

  ExecutorOptions options;
  // The process that made the pool. A process forked from it has a copy of this State, but not
  // the dispatcher thread, and maybe a lock that another thread held at the fork.
  pid_t owner = ::getpid();
  std::mutex mutex;  // guards queue, stopping, abandon
  std::deque<Job> queue;
  bool stopping = false;      // no new submissions; the loop ends when the work is done
  bool abandon = false;       // shutdown(false): fail what is queued, kill what runs
  internal::UniqueFd wake;    // eventfd: submit() and shutdown() nudge the loop
  std::mutex shutdown_mutex;  // serializes shutdown() callers
  std::thread dispatcher;
  // Owned by the dispatcher thread once it runs.
  std::vector<Slot> slots;
  // What an entry of poll_fds (after the first, the wake-up) is for.
  enum class Watch { dying, answers, requests, exit };
  std::vector<pollfd> poll_fds;
  std::vector<std::pair<std::size_t, Watch>> poll_slots;  // the slot and use of each entry
  std::vector<std::size_t> depth;                         // take_work's per-slot limit, reused

  bool forked() const noexcept { return owner != ::getpid(); }
  // Adds what to poll for `slot` (index i); returns when it must be looked at next at the latest.
  std::optional<Clock::time_point> watch(std::size_t i);

  // Queues the jobs of one batch under one lock with one wake-up.
  void enqueue(std::vector<Job> jobs);
  void notify() const {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake.get(), &one, sizeof one);
  }
  bool take_work();
  bool abandon_all();
  void send(Slot& slot, Job job);
  void wait_for_events();
  // Settles the oldest jobs of `slot` as its worker reports them; re-queues the `dropped`
  // newest, which never started.
  void settle_ended(Slot& slot, std::size_t dropped_count);
  internal::WorkerProcess::Ended ended_for(Slot& slot) {
    return [&slot](Outcome outcome) {
      settle(slot.jobs.front(), std::move(outcome));
      slot.jobs.pop_front();
    };
  }
  void loop();
};

// Hands queued jobs to workers, level by level so that the queue is shared fairly. Returns false
// when the loop should end: the pool is stopping and has no work left, or it is abandoning its
// work (shutdown(false)).
bool Executor::State::take_work() {
  std::size_t room = 0;
  depth.resize(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    std::size_t in_flight = slots[i].jobs.size();
    depth[i] = depth_for(slots[i].process->typical_call_time());
    // A quick worker is topped up once half its calls are answered: one write (and one wake-up
    // of the worker) per kMaxDepth / 2 calls, not one per call.
    if (depth[i] > 1 && in_flight > depth[i] / 2) depth[i] = in_flight;
    room += depth[i] - std::min(depth[i], in_flight);
  }
  std::deque<Job> batch;
  {
    std::lock_guard lock(mutex);
    if (abandon) return abandon_all();
    while (batch.size() < room && !queue.empty()) {
      batch.push_back(std::move(queue.front()));
      queue.pop_front();
    }
  }
  for (std::size_t level = 1; level <= kMaxDepth && !batch.empty(); ++level) {
    bool any = false;
    for (std::size_t i = 0; i < slots.size() && !batch.empty(); ++i) {
      Slot& slot = slots[i];
      if (slot.jobs.size() >= level || level > depth[i]) continue;
      if (!slot.jobs.empty() && !slot.process->accepts_call()) continue;
      send(slot, std::move(batch.front()));
      batch.pop_front();
      any = true;
    }
    if (!any) break;
  }
  for (Slot& slot : slots) {
    if (slot.process->wants_to_write()) slot.process->flush();
  }
  bool busy =
      std::any_of(slots.begin(), slots.end(), [](const Slot& s) { return !s.jobs.empty(); });
  std::lock_guard lock(mutex);
  while (!batch.empty()) {  // what no worker could take yet goes back, in order
    queue.push_front(std::move(batch.back()));
    batch.pop_back();
  }
  return !(stopping && queue.empty() && !busy);
}

// Fails what is queued and what runs (called with the mutex held). Returns false.
bool Executor::State::abandon_all() {
  const Outcome shut =
      Outcome::error(Outcome::Kind::cancelled, "the pool was shut down before the task finished");
  for (Job& job : queue) settle(job, shut);
  queue.clear();
  for (Slot& slot : slots) {
    slot.process->stop(false);  // reaped when the loop ends
    for (Job& job : slot.jobs) settle(job, shut);
    slot.jobs.clear();
  }
  return false;
}

void Executor::State::send(Slot& slot, Job job) {
  slot.jobs.push_back(std::move(job));
  try {
    // The job stays in slot.jobs, unchanged, until its call ends or its worker is stopped.
    slot.process->send(slot.jobs.back().task, slot.jobs.back().args, options.timeout, true);
  } catch (...) {
    settle(slot.jobs.back(), outcome_of_current());
    slot.jobs.pop_back();
  }
}

void Executor::State::settle_ended(Slot& slot, std::size_t dropped_count) {
  if (dropped_count == 0) return;
  std::lock_guard lock(mutex);
  for (std::size_t k = 0; k < dropped_count && !slot.jobs.empty(); ++k) {
    queue.push_front(std::move(slot.jobs.back()));
    slot.jobs.pop_back();
  }
}

std::optional<Clock::time_point> Executor::State::watch(std::size_t i) {
  internal::WorkerProcess& process = *slots[i].process;
  std::optional<Clock::time_point> next;
  // Without a pidfd a process's death is looked for every so often.
  auto soon = [&next](std::chrono::milliseconds after) {
    auto t = Clock::now() + after;
    if (!next || t < *next) next = t;
  };
  for (const internal::Child& dying : process.dying()) {  // wake when it has died, to reap it
    if (dying.exit_fd() < 0) {
      soon(std::chrono::milliseconds(1));
      continue;
    }
    poll_fds.push_back({dying.exit_fd(), POLLIN, 0});
    poll_slots.emplace_back(i, Watch::dying);
  }
  if (slots[i].jobs.empty()) return next;
  if (process.response_fd() >= 0) {
    poll_fds.push_back({process.response_fd(), POLLIN, 0});
    poll_slots.emplace_back(i, Watch::answers);
  }
  if (process.wants_to_write()) {
    poll_fds.push_back({process.request_fd(), POLLOUT, 0});
    poll_slots.emplace_back(i, Watch::requests);
  }
  // Its death, too: a grandchild holding the answer pipe would hide it from the pipe.
  if (process.exit_fd() >= 0) {
    poll_fds.push_back({process.exit_fd(), POLLIN, 0});
    poll_slots.emplace_back(i, Watch::exit);
  } else if (process.child() != nullptr) {
    soon(std::chrono::milliseconds(50));
  }
  if (auto d = process.deadline(); d && (!next || *d < *next)) next = d;
  return next;
}

void Executor::State::wait_for_events() {
  poll_fds.assign(1, {wake.get(), POLLIN, 0});  // reused: no allocation per round
  poll_slots.clear();
  std::optional<Clock::time_point> soonest;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    std::optional<Clock::time_point> next = watch(i);
    if (next && (!soonest || *next < *soonest)) soonest = next;
  }
  internal::poll_until(poll_fds.data(), poll_fds.size(), soonest);
  if (poll_fds[0].revents != 0) {
    std::uint64_t count = 0;
    [[maybe_unused]] ssize_t n = ::read(wake.get(), &count, sizeof count);
  }
  // In order: a slot's answers are read before its death is reported.
  for (std::size_t k = 1; k < poll_fds.size(); ++k) {
    if (poll_fds[k].revents == 0) continue;
    auto [i, use] = poll_slots[k - 1];
    Slot& slot = slots[i];
    if (use == Watch::requests) {
      if (slot.process->wants_to_write()) slot.process->flush();
    } else if (use == Watch::answers && !slot.jobs.empty()) {
      settle_ended(slot, slot.process->read_available(ended_for(slot)));
    } else if (use == Watch::exit && !slot.jobs.empty()) {
      settle_ended(slot, slot.process->on_exit(ended_for(slot)));
    }
  }
  auto now = Clock::now();
  for (Slot& slot : slots) {
    slot.process->reap_dying(false);  // the workers killed earlier, once they have died
    if (slot.jobs.empty()) continue;
    if (slot.process->exit_fd() < 0) settle_ended(slot, slot.process->on_exit(ended_for(slot)));
    if (slot.jobs.empty()) continue;
    settle_ended(slot, slot.process->expire_if_overdue(now, ended_for(slot)));
  }
}

void Executor::State::loop() {
  while (take_work()) wait_for_events();
  for (Slot& slot : slots) {
    slot.process->stop();
    slot.process->reap_dying(true);
  }
}

Executor::Executor(ExecutorOptions options) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.options = std::move(options);
  int count = s.options.workers > 0
                  ? s.options.workers
                  : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  s.slots.resize(static_cast<std::size_t>(count));
  for (State::Slot& slot : s.slots) {  // the dispatcher never waits for a process to die
    slot.process = std::make_unique<internal::WorkerProcess>(s.options.worker, true);
  }
  s.wake.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s.wake) throw SystemError("eventfd", errno);
  s.dispatcher = std::thread([&s] { s.loop(); });
}

Executor::~Executor() {
  if (state_ && state_->forked()) {
    // The parent's: its thread is not here to join, its locks and condition variables may be
    // held or waited on, its workers are not this process's to kill. Left as it is.
    [[maybe_unused]] State* left = state_.release();
    return;
  }
  shutdown(false);
}

void Executor::State::enqueue(std::vector<Job> jobs) {
  if (forked()) {
    throw InvalidState(fmt::format(
        "submit: this pool was made by process {}, and a process forked from it cannot use it "
        "(its dispatcher thread is not copied by fork); make a new pool in this process",
        owner));
  }
  bool was_empty = false;
  {
    std::lock_guard lock(mutex);
    if (stopping) throw InvalidState("submit: the pool has been shut down");
    was_empty = queue.empty();
    for (Job& job : jobs) queue.push_back(std::move(job));
  }
  // Once for the whole batch, and only when the queue was empty: otherwise the dispatcher has a
  // wake-up pending, or left work queued for want of a free worker and looks again as soon as
  // one answers. A caller submitting call after call costs no wake-up (and no write) per call.
  if (was_empty) notify();
}

std::future<Value> Executor::submit(std::string task, Value args) {
  auto batch = std::make_shared<Batch>(1);
  std::vector<Job> jobs;
  jobs.push_back({std::move(task), std::move(args), batch, 0});
  state_->enqueue(std::move(jobs));
  // Deferred: unwrap() runs in the thread that calls get(), so the exception is made there.
  return std::async(std::launch::deferred, [batch = std::move(batch)] {
    batch->wait();
    return internal::unwrap(std::move(batch->outcomes[0]));
  });
}

void Executor::submit_each(const std::string& task, std::vector<Value> items, Ended ended) {
  auto batch = std::make_shared<Batch>(std::move(ended));
  std::vector<Job> jobs;
  jobs.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    jobs.push_back({task, std::move(items[i]), batch, i});
  }
  state_->enqueue(std::move(jobs));
}

std::vector<MapResult> Executor::map_with_error_catching(const std::string& task,
                                                         const std::vector<Value>& items) {
  auto batch = std::make_shared<Batch>(items.size());
  std::vector<Job> jobs;
  jobs.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) jobs.push_back({task, items[i], batch, i});
  state_->enqueue(std::move(jobs));
  batch->wait();
  std::vector<MapResult> results;
  results.reserve(items.size());
  for (Outcome& o : batch->outcomes) {
    switch (o.kind) {
      case Outcome::Kind::value:
        results.push_back({StatusKind::COMPLETE, std::move(o.value)});
        break;
      case Outcome::Kind::timeout:
        results.push_back({StatusKind::TIMEOUT, std::move(o.message)});
        break;
      case Outcome::Kind::task:
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
  if (s.forked()) return;  // the parent's pool: nothing of it is this process's to stop
  {
    // Before the serializing lock: a shutdown(false) cuts short a shutdown(true) that another
    // thread is waiting in.
    std::lock_guard lock(s.mutex);
    s.stopping = true;
    if (!wait) s.abandon = true;
  }
  s.notify();
  std::lock_guard serial(s.shutdown_mutex);
  if (s.dispatcher.joinable()) s.dispatcher.join();
}

}  // namespace kiln::pool
