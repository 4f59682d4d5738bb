#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <thread>

#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

// Tasks used here (square, echo, pid, sleep_ms, crash, init_fails) are registered in
// worker_test.cc.

namespace kiln::pool {
namespace {

using namespace std::chrono_literals;

// -1: the worker dies; -2: it hangs; otherwise the square.
KILN_TASK(square_or_die, [](const Value& x) -> Value {
  int n = x.get<int>();
  if (n == -1) ::kill(::getpid(), SIGKILL);
  if (n == -2) std::this_thread::sleep_for(60s);
  return n * n;
});
// Sleeps the given milliseconds, then answers with the worker's pid.
KILN_TASK(pid_after_ms, [](const Value& ms) -> Value {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms.get<int>()));
  return ::getpid();
});

size_t thread_count() {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                                           std::filesystem::directory_iterator{}));
}

TEST(Executor, HeaderExample) {
  Executor pool({.workers = 4, .timeout = 2s});
  std::future<Value> f = pool.submit("square", 7);
  EXPECT_EQ(f.get(), 49);
  auto results = pool.map_with_error_catching("square", {1, 2, 3});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[2].status, StatusKind::COMPLETE);
  EXPECT_EQ(results[2].value, 9);
}

// The seed's executor test: a slow task, a crashing task, a normal one, an echo. The seed's
// timeout is 15 ms; on a loaded 2-core machine under ASan a worker could take longer than that
// just to be scheduled and die, turning the crash into a timeout. 300 ms keeps the slow task
// (2 s) far past it and the crash well within it.
TEST(Executor, SlowCrashingNormalAndEchoTasks) {
  Executor pool({.workers = 2, .timeout = 300ms});
  std::future<Value> slow = pool.submit("sleep_ms", 2000);
  std::future<Value> crash = pool.submit("crash", nullptr);
  std::future<Value> normal = pool.submit("square", 3);
  std::future<Value> echo = pool.submit("echo", "hello");
  EXPECT_THROW(slow.get(), TimeoutError);
  EXPECT_THROW(crash.get(), ChildProcessError);
  EXPECT_EQ(normal.get(), 9);
  EXPECT_EQ(echo.get(), "hello");
  EXPECT_EQ(static_cast<int>(StatusKind::RUNNING), 0);
  EXPECT_EQ(static_cast<int>(StatusKind::COMPLETE), 1);
  EXPECT_EQ(static_cast<int>(StatusKind::EXCEPTION), 2);
  EXPECT_EQ(static_cast<int>(StatusKind::TIMEOUT), 3);
}

TEST(Executor, MapWithErrorCatchingKeepsOrderAndStatuses) {
  Executor pool({.workers = 3});
  std::vector<Value> items;
  for (int i = 0; i < 100; ++i) items.emplace_back(i);
  auto results = pool.map_with_error_catching("square", items);
  ASSERT_EQ(results.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(results[i].status, StatusKind::COMPLETE);
    EXPECT_EQ(results[i].value, i * i);
  }
  Executor strict({.workers = 2, .timeout = 100ms});
  auto mixed = strict.map_with_error_catching("sleep_ms", {0, 5000, 1});
  EXPECT_EQ(mixed[0].status, StatusKind::COMPLETE);
  EXPECT_EQ(mixed[1].status, StatusKind::TIMEOUT);
  EXPECT_EQ(mixed[2].status, StatusKind::COMPLETE);
  auto failed = strict.map_with_error_catching("no_such_task", {1});
  EXPECT_EQ(failed[0].status, StatusKind::EXCEPTION);
  EXPECT_NE(failed[0].value.get<std::string>().find("unknown task"), std::string::npos);
}

TEST(Executor, MaxUsesRecyclesOnTheThirdSubmit) {
  Executor pool({.workers = 1, .worker = {.max_uses = 2}});
  pid_t a = pool.submit("pid", nullptr).get().get<pid_t>();
  pid_t b = pool.submit("pid", nullptr).get().get<pid_t>();
  pid_t c = pool.submit("pid", nullptr).get().get<pid_t>();
  EXPECT_EQ(a, b);
  EXPECT_NE(b, c);
}

TEST(Executor, SixtyFourWorkersOnOneDispatcherThread) {
  {
    // Warm up: the process-wide spawner thread (and a sanitizer's own threads) start here.
    Executor warm({.workers = 1});
    warm.submit("square", 1).get();
  }
  size_t threads_before = thread_count();
  Executor pool({.workers = 64, .timeout = 60s});
  std::vector<Value> items(256, 20);  // 20 ms each: 256 tasks spread over the workers
  auto results = pool.map_with_error_catching("sleep_ms", items);
  for (const MapResult& r : results) EXPECT_EQ(r.status, StatusKind::COMPLETE) << r.value;
  std::vector<Value> pids(256, nullptr);
  std::set<pid_t> distinct;
  for (const MapResult& r : pool.map_with_error_catching("pid", pids))
    distinct.insert(r.value.get<pid_t>());
  EXPECT_GT(distinct.size(), 8u);
  EXPECT_LE(distinct.size(), 64u);
  EXPECT_LE(thread_count(), threads_before + 1) << "one dispatcher thread for 64 workers";
}

// Quick calls are sent to a worker several at a time; the ones behind a call that crashes or
// times out never started, and must run again, not fail with it.
TEST(Executor, CallsQueuedBehindACrashOrATimeoutRunAgain) {
  Executor pool({.workers = 1, .timeout = 1s});
  std::vector<Value> warm(200, 3);  // the worker proves quick: calls get pipelined
  for (const MapResult& r : pool.map_with_error_catching("square", warm))
    ASSERT_EQ(r.status, StatusKind::COMPLETE);
  std::vector<Value> items;
  for (int i = 0; i < 300; ++i) items.emplace_back(i == 40 ? -1 : i == 170 ? -2 : i);
  auto results = pool.map_with_error_catching("square_or_die", items);
  ASSERT_EQ(results.size(), items.size());
  for (int i = 0; i < 300; ++i) {
    if (i == 40) {
      EXPECT_EQ(results[i].status, StatusKind::EXCEPTION);
      EXPECT_NE(results[i].value.get<std::string>().find("SIGKILL"), std::string::npos)
          << results[i].value;
    } else if (i == 170) {
      EXPECT_EQ(results[i].status, StatusKind::TIMEOUT) << results[i].value;
    } else {
      EXPECT_EQ(results[i].status, StatusKind::COMPLETE) << i << ": " << results[i].value;
      EXPECT_EQ(results[i].value, i * i);
    }
  }
}

// A worker whose calls take a while gets one at a time, so quick work submitted behind a long
// call runs on the other worker instead of waiting for it.
TEST(Executor, ASlowCallHoldsNoQuickWorkHostage) {
  Executor pool({.workers = 2, .timeout = 30s});
  std::vector<Value> slow(4, 20);
  for (const MapResult& r : pool.map_with_error_catching("sleep_ms", slow))
    ASSERT_EQ(r.status, StatusKind::COMPLETE);
  std::future<Value> nap = pool.submit("pid_after_ms", 1500);
  std::vector<std::future<Value>> quick;
  for (int i = 0; i < 20; ++i) quick.push_back(pool.submit("pid_after_ms", 0));
  std::set<pid_t> quick_pids;
  for (auto& f : quick) quick_pids.insert(f.get().get<pid_t>());
  pid_t nap_pid = nap.get().get<pid_t>();
  EXPECT_EQ(quick_pids.count(nap_pid), 0u) << "a quick call waited behind the long one";
  EXPECT_EQ(quick_pids.size(), 1u);
}

TEST(Executor, LargeValuesWhilePipelined) {
  Executor pool({.workers = 2, .timeout = 60s});
  std::vector<Value> warm(100, 1);
  pool.map_with_error_catching("square", warm);
  std::vector<Value> items;
  for (int i = 0; i < 8; ++i) {  // each larger than a pipe: written as the pipe drains
    std::vector<std::uint8_t> bytes((size_t{3} << 20) + static_cast<size_t>(i));
    for (size_t k = 0; k < bytes.size(); k += 997) bytes[k] = static_cast<std::uint8_t>(i + k);
    items.push_back(Value::binary(std::move(bytes)));
  }
  auto results = pool.map_with_error_catching("echo", items);
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_EQ(results[i].status, StatusKind::COMPLETE) << results[i].value;
    EXPECT_TRUE(results[i].value == items[i]) << "item " << i;
  }
}

TEST(Executor, AFailingInitializerFailsEachCallWithItsError) {
  Executor pool({.workers = 2, .worker = {.initializer = "init_fails"}});
  auto results = pool.map_with_error_catching("square", {1, 2, 3});
  for (const MapResult& r : results) {
    EXPECT_EQ(r.status, StatusKind::EXCEPTION);
    EXPECT_EQ(r.value, "std::runtime_error: no licence server");
  }
}

TEST(Executor, ShutdownIsIdempotentAndRefusesNewWork) {
  std::vector<pid_t> before = testing::child_pids();
  Executor pool({.workers = 2});
  EXPECT_EQ(pool.submit("square", 2).get(), 4);
  pool.shutdown();
  pool.shutdown();
  EXPECT_THROW(pool.submit("square", 2), InvalidState);
  EXPECT_EQ(testing::child_pids(), before) << "every worker was reaped";
}

TEST(Executor, ShutdownWithoutWaitKillsRunningAndQueuedWorkPromptly) {
  std::vector<pid_t> before = testing::child_pids();
  auto start = std::chrono::steady_clock::now();
  std::future<Value> running, queued;
  {
    Executor pool({.workers = 1});
    running = pool.submit("sleep_ms", 60000);
    queued = pool.submit("square", 3);
    std::this_thread::sleep_for(100ms);
  }  // the destructor: shutdown(false)
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_THROW(running.get(), Cancelled);
  EXPECT_THROW(queued.get(), Cancelled);
  EXPECT_EQ(testing::child_pids(), before);
}

TEST(Executor, AWorkerThatCannotStartFailsTheCallWithTheSystemError) {
  TempDirectory dir;
  Executor pool(
      {.workers = 1, .worker = {.output = Output::file, .output_file = dir / "no" / "log"}});
  try {
    pool.submit("square", 2).get();
    FAIL() << "a worker started without its output file";
  } catch (const SystemError& e) {
    EXPECT_EQ(e.error_number(), ENOENT);
    EXPECT_NE(std::string(e.what()).find((dir / "no" / "log").string()), std::string::npos)
        << e.what();
  }
}

TEST(Executor, ShutdownWithWaitFinishesQueuedWork) {
  Executor pool({.workers = 2});
  std::vector<std::future<Value>> futures;
  for (int i = 0; i < 20; ++i) futures.push_back(pool.submit("square", i));
  pool.shutdown(true);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(futures[i].get(), i * i);
}

// A process exiting must not wait for work someone else's shutdown(true) is waiting for.
TEST(Executor, ShutdownWithoutWaitCutsAWaitingShutdownShort) {
  Executor pool({.workers = 1});
  std::future<Value> hang = pool.submit("sleep_ms", 60000);
  std::thread waiter([&pool] { pool.shutdown(true); });
  std::this_thread::sleep_for(100ms);
  pool.shutdown(false);
  waiter.join();
  EXPECT_THROW(hang.get(), Cancelled);
}

}  // namespace
}  // namespace kiln::pool
