// The one thread of each process that starts pool workers and templates.
#pragma once

#include <sys/types.h>

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "internal/spawn.h"

namespace kiln::internal {

// Starts every worker from one thread that lives as long as the process: PR_SET_PDEATHSIG fires
// when the thread that started a child exits, so a worker started from a short-lived thread
// would otherwise be killed with that thread. One per process: fork() copies only the thread
// that calls it, so a forked child has its parent's Spawner but not its thread (and maybe a
// lock another thread held at the fork); it makes its own and leaves the copy untouched.
class Spawner {
 public:
  // Child::spawn(spec), run on this process's spawning thread.
  static Child spawn(const SpawnSpec& spec) {
    Spawner& spawner = of_this_process();
    std::packaged_task<Child()> job([&spec] { return Child::spawn(spec); });
    std::future<Child> result = job.get_future();
    {
      std::lock_guard lock(spawner.mutex_);
      spawner.jobs_.push_back(std::move(job));
    }
    spawner.wake_.notify_one();
    return result.get();
  }

 private:
  explicit Spawner(pid_t owner) : owner_(owner) {}

  // Without a lock: one that a thread of the parent held at the fork would stay held here.
  static Spawner& of_this_process() {
    static std::atomic<Spawner*> current{nullptr};
    pid_t self = ::getpid();
    Spawner* spawner = current.load(std::memory_order_acquire);
    while (spawner == nullptr || spawner->owner_ != self) {
      // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): lives as long as the process
      auto* fresh = new Spawner(self);
      if (current.compare_exchange_strong(spawner, fresh, std::memory_order_acq_rel)) {
        fresh->start();  // the parent's copy is never touched again
        return *fresh;
      }
      delete fresh;  // NOLINT(cppcoreguidelines-owning-memory): another thread's won
    }
    return *spawner;
  }

  void start() {
    std::thread([this] {
      for (;;) {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return !jobs_.empty(); });
        std::packaged_task<Child()> job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        job();
      }
    }).detach();
  }

  const pid_t owner_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<Child()>> jobs_;
};

}  // namespace kiln::internal
