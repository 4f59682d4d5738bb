#include <signal.h>
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/process.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

using namespace std::chrono_literals;

// A process of this test's own that has a child: {it, its descendants}; {0, {}} when none shows
// up within `patience`.
std::pair<pid_t, std::vector<pid_t>> a_child_with_children(std::chrono::milliseconds patience) {
  auto give_up = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < give_up) {
    for (pid_t child : descendant_processes(::getpid())) {
      std::vector<pid_t> below = descendant_processes(child);
      if (!below.empty()) return {child, below};
    }
    std::this_thread::sleep_for(10ms);
  }
  return {0, {}};
}

// The test's tree: this process -> child -> grandchild that ignores SIGTERM (test_support's
// "tree" mode), run by kiln::run in a thread.
TEST(ProcessTree, KillChildProcessesKillsEveryDescendantButNotTheProcessItself) {
  RunResult result;
  std::thread runner(
      [&result] { result = run({.argv = testing::child_argv("tree"), .timeout = 120s}); });
  auto [child, below] = a_child_with_children(30s);
  if (child == 0) {
    kill_child_processes(::getpid());  // end the runner before failing
    runner.join();
    FAIL() << "the tree never showed up: " << result.output;
  }
  EXPECT_EQ(below.size(), 1u);
  EXPECT_EQ(kill_child_processes(child), below.size());
  for (pid_t pid : below) EXPECT_TRUE(testing::wait_process_gone(pid, 10000)) << pid;
  EXPECT_FALSE(testing::process_gone(child)) << "the process itself is spared";
  EXPECT_TRUE(descendant_processes(child).empty()) << "a killed child is a zombie: left out";
  ::kill(child, SIGKILL);
  runner.join();
  EXPECT_EQ(result.signal, SIGKILL) << result.status_text();
}

TEST(ProcessTree, NoSuchProcessIsNothingToDoAndNonPositiveIdsAreRefused) {
  // pid_max is at most 2^22: this pid cannot exist.
  EXPECT_EQ(kill_child_processes(1 << 30), 0u);
  EXPECT_TRUE(descendant_processes(1 << 30).empty());
  EXPECT_THROW(kill_child_processes(0), InvalidArgument);
  EXPECT_THROW(kill_child_processes(-1), InvalidArgument);
  EXPECT_THROW(descendant_processes(0), InvalidArgument);
}

}  // namespace
}  // namespace kiln
