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
#include <vector>

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

// Ends its worker's process the way a Python task's sys.exit does (the notice first), with a
// process that then takes 30 s to end.
KILN_TASK(ends_process_slowly, [](const Value&) -> Value {
  task_ends_process(5);
  std::this_thread::sleep_for(30s);
  std::_Exit(5);
});
KILN_TASK(zeros, [](const Value& size) -> Value {
  return Value::binary(std::vector<std::uint8_t>(size.get<std::size_t>()));
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

namespace kiln::pool {
namespace {

TEST(ExitNotice, ATaskThatEndsItsProcessIsACrashAtOnceHoweverLongTheProcessTakes) {
  bounded(60s, [] {  // the process lingers 30 s: the deadline (2 s) would come first
    Worker worker;
    try {
      worker.call("ends_process_slowly", nullptr, 2s);
      ADD_FAILURE() << "no error";
    } catch (const ChildProcessError& e) {
      EXPECT_NE(std::string(e.what()).find("exited with code 5"), std::string::npos) << e.what();
    }
    EXPECT_EQ(worker.call("sleep_ms", 0, 30s), "slept");
    Executor pool({.workers = 1, .timeout = 2s});
    std::future<Value> ended = pool.submit("ends_process_slowly", nullptr);
    std::string message = child_died_message(ended);
    EXPECT_NE(message.find("exited with code 5"), std::string::npos) << message;
  });
}

TEST(ExitNotice, OutsideAWorkerItDoesNothing) {
  task_ends_process(3);  // this process is no worker: nothing is written, nothing ends
  Worker worker;
  EXPECT_EQ(worker.call("sleep_ms", 0, 30s), "slept");
}

TEST(MessageLimit, AResultOverItFailsTheCallNamingTaskSizeAndLimitAndTheWorkerStays) {
  Worker worker;
  Value pid = worker.call("pid", nullptr, 30s);
  try {
    worker.call("zeros", kMaxMessageBytes, 120s);
    ADD_FAILURE() << "no error";
  } catch (const TaskError& e) {
    EXPECT_EQ(e.type_name(), "kiln::InvalidArgument");
    std::string message = e.message();
    EXPECT_NE(message.find("the result of task 'zeros'"), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(kMaxMessageBytes) + " bytes"), std::string::npos)
        << message;
  }
  EXPECT_EQ(worker.call("pid", nullptr, 30s), pid);
}

TEST(MessageLimit, ArgumentsOverItAreRefusedNamingTheTask) {
  Worker worker;
  std::string message = testing::error_of([&worker] {
    worker.send("zeros", Value::binary(std::vector<std::uint8_t>(kMaxMessageBytes)));
  });
  EXPECT_NE(message.find("the arguments of task 'zeros'"), std::string::npos) << message;
  EXPECT_EQ(worker.call("sleep_ms", 0, 30s), "slept");
}

TEST(WorkerWaitFor, IsFalseWhileTheCallRunsAndTrueOnceItEnded) {
  Worker worker;
  EXPECT_TRUE(worker.wait_for(0ms));  // nothing in flight: recv() would not wait
  worker.send("sleep_ms", 2000, 60s);
  EXPECT_FALSE(worker.wait_for(0ms));
  int slices = 0;
  while (!worker.wait_for(50ms)) ++slices;
  EXPECT_GT(slices, 0);
  EXPECT_EQ(worker.recv(), "slept");
}

}  // namespace
}  // namespace kiln::pool
