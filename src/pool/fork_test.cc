// Pools in a process forked after it used a pool (issue 27): fork() copies only the calling
// thread, so a process-wide helper thread of the parent's (the Spawner that starts every worker,
// an Executor's dispatcher) does not exist in the child, and a lock another thread held at the
// fork stays held there. The child makes and uses pools of its own; what it inherited is not its
// to use or to kill.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/pool.h"

// Tasks used here (square, pid) are registered in worker_test.cc.

namespace kiln::pool {
namespace {

using namespace std::chrono_literals;

// The exit status of forked child `pid`, or -1 after killing it when it runs past `limit`: a
// hang fails the test instead of hanging it.
int wait_bounded(pid_t pid, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
    std::this_thread::sleep_for(10ms);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

// Why a sanitizer's runtime, not kiln, decides what a child forked from a process with threads
// can do; "" without one. ThreadSanitizer ends such a child when it starts a thread
// (die_after_fork), and kiln's Spawner starts one. gcc 12's AddressSanitizer takes no allocator
// lock around fork(): a child forked while another thread was inside its allocator waits for
// that thread's lock for ever, in malloc (seen here: the child's Spawner thread in
// SizeClassAllocator64::GetFromAllocator), where glibc's malloc is fork-safe.
std::string sanitizer_forbids(bool during_allocations) {
#if defined(__SANITIZE_THREAD__)
  (void)during_allocations;
  return "ThreadSanitizer ends a child of a multi-threaded fork that starts a thread";
#elif defined(__SANITIZE_ADDRESS__)
  if (during_allocations) {
    return "AddressSanitizer's allocator is not fork-safe: a child forked while another thread "
           "allocates can deadlock in malloc (the runtime's lock, not kiln's)";
  }
  return "";
#else
  (void)during_allocations;
  return "";
#endif
}

// What the forked child checks: 0 when all held, else the number of the check that failed.
int in_forked_child(std::unique_ptr<Worker> inherited, pid_t parents_worker,
                    std::unique_ptr<Executor> inherited_pool) {
  try {
    Worker mine;
    if (mine.call("square", 7, 30s) != 49) return 2;
    {
      Executor pool({.workers = 2});
      if (pool.submit("square", 8).get() != 64) return 3;
    }
    // The inherited Worker's process is the parent's: the child's call starts one of its own.
    if (inherited->call("pid", nullptr, 30s).get<pid_t>() == parents_worker) return 4;
    try {
      (void)inherited_pool->submit("square", 1);
      return 5;  // the parent's dispatcher thread is not here: a clear error, not a hang
    } catch (const InvalidState& e) {
      if (std::string(e.what()).find("forked") == std::string::npos) return 6;
    }
    inherited_pool->shutdown();  // does nothing: the pool is the parent's
    inherited_pool.reset();      // neither hangs nor touches the parent's workers
    inherited.reset();
    return 0;
  } catch (const std::exception& e) {
    (void)std::fprintf(stderr, "forked child: %s\n", e.what());
    return 7;
  }
}

TEST(PoolAfterFork, AForkedChildMakesAndUsesPoolsOfItsOwn) {
  if (std::string why = sanitizer_forbids(false); !why.empty()) GTEST_SKIP() << why;
  auto worker = std::make_unique<Worker>();
  ASSERT_EQ(worker->call("square", 2, 30s), 4);  // the Spawner's thread runs now
  pid_t parents_worker = worker->pid();
  auto pool = std::make_unique<Executor>(ExecutorOptions{.workers = 1});
  ASSERT_EQ(pool->submit("square", 3).get(), 9);
  pid_t child = ::fork();
  ASSERT_NE(child, -1);
  if (child == 0) std::_Exit(in_forked_child(std::move(worker), parents_worker, std::move(pool)));
  EXPECT_EQ(wait_bounded(child, 120s), 0) << "-1: the forked child hung; see in_forked_child";
  // The child neither killed nor used the parent's worker and pool.
  EXPECT_EQ(worker->pid(), parents_worker);
  EXPECT_EQ(worker->call("pid", nullptr, 30s).get<pid_t>(), parents_worker);
  EXPECT_EQ(pool->submit("square", 6).get(), 36);
}

// A fork while another thread holds the Spawner's lock or is inside it: the child's first
// worker must still start.
TEST(PoolAfterFork, AForkDuringAnotherThreadsSpawnsDoesNotDeadlockTheChild) {
  if (std::string why = sanitizer_forbids(true); !why.empty()) GTEST_SKIP() << why;
  Worker first;
  ASSERT_EQ(first.call("square", 2, 30s), 4);  // the Spawner's thread runs now
  std::atomic<bool> stop{false};
  std::thread spawning([&stop] {
    while (!stop.load()) {
      Worker w;
      (void)w.call("square", 1, 30s);
    }
  });
  for (int i = 0; i < 5; ++i) {
    pid_t child = ::fork();
    ASSERT_NE(child, -1);
    if (child == 0) {
      try {
        Worker w;
        std::_Exit(w.call("square", 9, 30s) == 81 ? 0 : 2);
      } catch (...) {
        std::_Exit(3);
      }
    }
    EXPECT_EQ(wait_bounded(child, 120s), 0) << "fork " << i << " (-1: the child hung)";
  }
  stop.store(true);
  spawning.join();
}

}  // namespace
}  // namespace kiln::pool
