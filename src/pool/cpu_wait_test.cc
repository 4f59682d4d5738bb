#include "cpu_wait.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "internal/spawn.h"
#include "testing/test_support.h"

namespace kiln::internal {
namespace {

using namespace std::chrono_literals;

TEST(RunState, ThisThreadRunsAndHasUsedTheCpu) {
  std::optional<RunState> state = run_state(::getpid());
  ASSERT_TRUE(state.has_value()) << "/proc/self/stat or /proc/self/schedstat unreadable";
  EXPECT_TRUE(state->runnable);
  EXPECT_GT(state->on_cpu_ns, 0U);
}

TEST(RunState, ASleepingProcessIsNotRunnable) {
  std::vector<std::string> argv = testing::child_argv("sleep", {"60000"});
  SpawnSpec spec;
  spec.executable = argv[0];
  spec.argv = argv;
  Child child = Child::spawn(spec);
  bool slept = false;
  for (int i = 0; i < 1000 && !slept; ++i) {  // until it is past its start (up to 10 s)
    std::optional<RunState> state = run_state(child.pid());
    ASSERT_TRUE(state.has_value());
    slept = !state->runnable;
    if (!slept) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(slept);
}

TEST(RunState, NoSuchProcessIsNothing) {
  SpawnSpec spec;
  spec.executable = "/bin/true";
  spec.argv = {"true"};
  Child child = Child::spawn(spec);
  pid_t gone = child.pid();
  child.reap();
  EXPECT_FALSE(run_state(gone).has_value());
}

}  // namespace
}  // namespace kiln::internal
