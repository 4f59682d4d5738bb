// Faults from a task beyond its own result (issue 27): a task that closes or replaces its
// worker's answer pipe, leaves a grandchild holding it, or ends its process while the process
// is slow to die. Each fails alone and promptly as a crash; the pool's other calls, its
// timeouts and its shutdown carry on. Every scenario runs under a limit, so that a hang fails.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln/temp_directory.h"
#include "protocol.h"
#include "testing/test_support.h"

// Tasks used here (pid, sleep_ms) are registered in worker_test.cc.

namespace kiln::pool {
namespace {

using namespace std::chrono_literals;

KILN_TASK(close_answer_fd, [](const Value&) -> Value {
  ::close(internal::kResponseFd);
  std::this_thread::sleep_for(60s);
  return "never read";
});
KILN_TASK(dup2_over_answer_fd, [](const Value&) -> Value {
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  ::dup2(devnull, internal::kResponseFd);
  ::close(devnull);
  return "into the void";  // and the worker waits for its next request, alive
});
// Forks a grandchild that leaves the worker's process group and holds the answer pipe for 60 s,
// writes its pid to the file named by the argument, and exits with code 7.
KILN_TASK(exit_leaving_grandchild, [](const Value& pid_file) -> Value {
  pid_t grandchild = ::fork();
  if (grandchild == 0) {
    ::setsid();
    std::this_thread::sleep_for(60s);
    std::_Exit(0);
  }
  if (FILE* f = std::fopen(pid_file.get<std::string>().c_str(), "w")) {
    (void)std::fprintf(f, "%d", grandchild);
    (void)std::fclose(f);
  }
  std::_Exit(7);
});

// Runs `scenario` on another thread; when it has not finished within `limit`, fails the test
// and ends this process (ctest runs each test in a process of its own): a hang must not hang.
void bounded(std::chrono::seconds limit, const std::function<void()>& scenario) {
  std::future<void> done = std::async(std::launch::async, scenario);
  if (done.wait_for(limit) == std::future_status::timeout) {
    ADD_FAILURE() << "still running after " << limit.count() << " s: the pool hung";
    (void)std::fflush(stdout);
    std::_Exit(1);
  }
  done.get();
}

std::string child_died_message(std::future<Value>& f) {
  try {
    f.get();
  } catch (const ChildProcessError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not ChildProcessError: ") + e.what();
  }
  return "no error";
}

// With `task` (which breaks its answer pipe) in flight: a 1 s call beside it completes, the
// broken one is a crash that names the pipe, timeouts still fire, and shutdown returns.
void breaks_its_answer_pipe(const char* task) {
  bounded(120s, [task] {
    Executor pool({.workers = 2, .timeout = 8s});
    std::future<Value> broken = pool.submit(task, nullptr);
    std::future<Value> beside = pool.submit("sleep_ms", 1000);
    std::string message = child_died_message(broken);
    EXPECT_NE(message.find("answer pipe"), std::string::npos) << message;
    EXPECT_EQ(beside.get(), "slept");
    std::future<Value> hung = pool.submit("sleep_ms", 600000);
    std::future<Value> after = pool.submit("sleep_ms", 0);
    EXPECT_EQ(after.get(), "slept");
    EXPECT_THROW(hung.get(), TimeoutError);
    pool.shutdown();
  });
}

TEST(AnswerPipe, ATaskThatClosesItFailsAloneInAnExecutor) {
  breaks_its_answer_pipe("close_answer_fd");
}

TEST(AnswerPipe, ATaskThatDup2sOverItFailsAloneInAnExecutor) {
  breaks_its_answer_pipe("dup2_over_answer_fd");
}

TEST(AnswerPipe, AWorkerWhoseTaskBreaksItRaisesAndRecovers) {
  for (const char* task : {"close_answer_fd", "dup2_over_answer_fd"}) {
    bounded(120s, [task] {
      Worker worker;
      try {
        worker.call(task, nullptr, 100s);
        ADD_FAILURE() << task << ": no error";
      } catch (const ChildProcessError& e) {
        EXPECT_NE(std::string(e.what()).find("answer pipe"), std::string::npos) << e.what();
      }
      EXPECT_EQ(worker.call("sleep_ms", 0, 30s), "slept");
    });
  }
}

TEST(AnswerPipe, AnExitIsSeenWhileAGrandchildHoldsIt) {
  TempDirectory dir;
  std::string pid_file = (dir / "grandchild").string();
  // The grandchild holds the pipe for 60 s: without the exit seen, the crash is reported then.
  bounded(30s, [&pid_file] {
    Executor pool({.workers = 2});  // no timeout
    std::future<Value> crashed = pool.submit("exit_leaving_grandchild", pid_file);
    std::future<Value> beside = pool.submit("sleep_ms", 1000);
    std::string message = child_died_message(crashed);
    EXPECT_NE(message.find("exited with code 7"), std::string::npos) << message;
    EXPECT_EQ(beside.get(), "slept");
  });
  std::string grandchild = testing::read_file(pid_file);  // it left the group: the test ends it
  if (!grandchild.empty()) ::kill(std::stoi(grandchild), SIGKILL);
}

}  // namespace
}  // namespace kiln::pool
