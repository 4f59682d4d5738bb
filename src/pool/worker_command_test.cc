// The pool's parts for hosts that cannot re-execute themselves (a Python interpreter): workers
// started from a command, their output on the caller's descriptors, deadlines that count from
// when a task reports its beginning, error details, and submit_each's callbacks.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include <fcntl.h>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln::pool {
namespace {

using namespace std::chrono_literals;

KILN_TASK(command_env, [](const Value& name) -> Value {
  const char* value = std::getenv(name.get<std::string>().c_str());
  return value != nullptr ? Value(value) : Value(nullptr);
});
KILN_TASK(command_line,
          [](const Value&) -> Value { return testing::read_file("/proc/self/cmdline"); });
// {prepare_ms, run_ms, report}: sleeps, reports its beginning (when `report`), sleeps again.
KILN_TASK(prepare_then_run, [](const Value& x) -> Value {
  std::this_thread::sleep_for(std::chrono::milliseconds(x.at(0).get<int>()));
  if (x.at(2).get<bool>()) task_begins();
  std::this_thread::sleep_for(std::chrono::milliseconds(x.at(1).get<int>()));
  return "ran";
});
KILN_TASK(throw_with_details, [](const Value& details) -> Value {
  const auto& bytes = details.get_binary();
  throw TaskError("ValueError", "boom", std::string(bytes.begin(), bytes.end()));
});
KILN_TASK(print_both, [](const Value& text) -> Value {
  std::printf("out:%s\n", text.get<std::string>().c_str());
  (void)std::fflush(stdout);
  (void)std::fprintf(stderr, "err:%s\n", text.get<std::string>().c_str());
  return nullptr;
});

std::string self() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

TEST(WorkerCommand, StartsTheGivenProgramWithTheTwoWorkerArguments) {
  // env(1) in front proves the command is what runs; the extra argument makes this program see
  // arguments it does not know, so that only serve_worker() (test_main.cc) can serve.
  Worker worker({.command = {"env", "KILN_COMMAND_TEST=yes", self(), "--as-command-worker"}});
  EXPECT_EQ(worker.call("command_env", "KILN_COMMAND_TEST"), "yes");
  std::string cmdline = worker.call("command_line", nullptr).get<std::string>();
  EXPECT_NE(cmdline.find(std::string("--as-command-worker") + '\0' + "--kiln-pool-worker"),
            std::string::npos);
  EXPECT_EQ(worker.call("square", 9), 81) << "the same worker serves on";
}

TEST(WorkerCommand, AProgramThatIsNoWorkerIsAClearError) {
  Worker worker({.command = {"true"}});
  try {
    worker.call("square", 2, 5s);
    FAIL() << "expected ChildProcessError";
  } catch (const ChildProcessError& e) {
    EXPECT_NE(std::string(e.what()).find("before it was ready"), std::string::npos) << e.what();
  }
  Worker missing({.command = {"no-such-kiln-worker-program"}});
  EXPECT_THROW(missing.call("square", 2), ToolNotFound);
}

TEST(WorkerCommand, OutputGoesToTheCallersDescriptors) {
  TempDirectory dir;
  std::string out_path = (dir / "out").string();
  std::string err_path = (dir / "err").string();
  int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(out, 0);
  ASSERT_GE(err, 0);
  {
    Worker worker({.stdout_fd = out, .stderr_fd = err});
    worker.call("print_both", "x");
  }
  ::close(out);
  ::close(err);
  EXPECT_EQ(testing::read_file(out_path), "out:x\n");
  EXPECT_EQ(testing::read_file(err_path), "err:x\n");
}

// [prepare_ms, run_ms, report]
Value plan(int prepare_ms, int run_ms, bool report = true) {
  return Value::array({prepare_ms, run_ms, report});
}

TEST(WorkerPreparation, TheTimeoutCountsFromTheReportedBeginning) {
  Worker worker({.preparation_timeout = 5s});
  // 300 ms of preparation, then 20 ms of work: within a 150 ms timeout once preparation is
  // not charged to it.
  EXPECT_EQ(worker.call("prepare_then_run", plan(300, 20), 150ms), "ran");
  try {
    worker.call("prepare_then_run", plan(300, 5000), 150ms);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
  }
  EXPECT_EQ(worker.call("prepare_then_run", plan(0, 0), 150ms), "ran") << "restarted after it";
}

TEST(WorkerPreparation, PreparationHasItsOwnLimit) {
  Worker worker({.preparation_timeout = 200ms});
  try {
    worker.call("prepare_then_run", plan(5000, 0), 10s);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("did not begin"), std::string::npos) << e.what();
  }
  // A task that never reports is held to the preparation limit alone.
  EXPECT_EQ(worker.call("prepare_then_run", plan(0, 100, false), 10ms), "ran");
  EXPECT_THROW(worker.call("prepare_then_run", plan(0, 5000, false), 10ms), TimeoutError);
}

TEST(WorkerPreparation, WithoutTheOptionTheTimeoutCountsFromTheStartOfTheCall) {
  Worker worker;
  EXPECT_THROW(worker.call("prepare_then_run", plan(300, 0), 100ms), TimeoutError);
}

TEST(WorkerPreparation, PipelinedCallsEachGetTheirOwnBeginning) {
  Executor pool({.workers = 1, .timeout = 150ms, .worker = {.preparation_timeout = 5s}});
  std::vector<Value> items(6, plan(100, 10));
  auto results = pool.map_with_error_catching("prepare_then_run", items);
  for (const MapResult& r : results) {
    EXPECT_EQ(r.status, StatusKind::COMPLETE) << r.value;
  }
}

TEST(TaskErrorDetails, ReachTheCallerFromWorkerAndExecutor) {
  Value bytes = Value::binary({0, 1, 2, 255});
  Worker worker;
  try {
    worker.call("throw_with_details", bytes);
    FAIL() << "expected TaskError";
  } catch (const TaskError& e) {
    EXPECT_EQ(e.type_name(), "ValueError");
    EXPECT_EQ(e.message(), "boom");
    EXPECT_EQ(e.details(), std::string("\0\1\2\xff", 4));
  }
  Executor pool({.workers = 1});
  try {
    pool.submit("throw_with_details", bytes).get();
    FAIL() << "expected TaskError";
  } catch (const TaskError& e) {
    EXPECT_EQ(e.details(), std::string("\0\1\2\xff", 4));
  }
}

// What submit_each's callback heard, for the test to read once everything ended.
struct Heard {
  std::mutex mutex;
  std::vector<std::pair<std::size_t, Executor::Result>> results;
  Executor::Ended callback() {
    return [this](std::size_t index, Executor::Result result) {
      std::lock_guard lock(mutex);
      results.emplace_back(index, std::move(result));
    };
  }
};

TEST(ExecutorSubmitEach, EachCallEndsThroughTheCallback) {
  Heard heard;
  {
    Executor pool({.workers = 2, .timeout = 300ms});
    pool.submit_each("square_or_die", {Value(3), Value(-1), Value(-2), Value(5)}, heard.callback());
    pool.shutdown(true);
  }
  ASSERT_EQ(heard.results.size(), 4u);
  std::vector<int> outcome(4, 0);  // 1 value, 2 crash, 3 timeout
  for (auto& [index, result] : heard.results) {
    try {
      Value v = result();
      EXPECT_EQ(v, index == 0 ? 9 : 25);
      outcome[index] = 1;
    } catch (const ChildProcessError&) {
      outcome[index] = 2;
    } catch (const TimeoutError&) {
      outcome[index] = 3;
    }
  }
  EXPECT_EQ(outcome, (std::vector<int>{1, 2, 3, 1}));
}

TEST(ExecutorSubmitEach, ShutdownWithoutWaitCancelsWhatIsLeft) {
  Heard heard;
  Executor pool({.workers = 1});
  pool.submit_each("sleep_ms", std::vector<Value>(5, Value(10000)), heard.callback());
  std::this_thread::sleep_for(50ms);
  pool.shutdown(false);
  ASSERT_EQ(heard.results.size(), 5u);
  for (auto& [index, result] : heard.results) EXPECT_THROW(result(), Cancelled) << index;
  EXPECT_THROW(pool.submit_each("square", {Value(1)}, heard.callback()), InvalidState);
}

}  // namespace
}  // namespace kiln::pool
