// BackgroundProcess (src/testing/background_process.h): started, logged, stopped with its
// group, and never left running when its starter is gone without stopping it.
#include "testing/background_process.h"

#include <signal.h>

#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

using testing::BackgroundProcess;

TEST(BackgroundProcess, LogsAndStopsTheWholeGroup) {
  TempDirectory dir;
  // The shell stands for a server that starts children of its own.
  BackgroundProcess server({"sh", "-c", "echo started; sleep 60 & sleep 60; echo never"}, {},
                           dir / "log");
  ASSERT_GT(server.pid(), 0) << server.log();
  ASSERT_TRUE(server.running());
  for (int i = 0; i < 500 && descendant_processes(server.pid()).size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::vector<pid_t> children = descendant_processes(server.pid());
  ASSERT_EQ(children.size(), 2u);
  server.stop();
  EXPECT_FALSE(server.running());
  EXPECT_TRUE(testing::process_gone(server.pid()));
  for (pid_t child : children) EXPECT_TRUE(testing::wait_process_gone(child, 5000)) << child;
  EXPECT_EQ(server.log(), "started\n");
}

TEST(BackgroundProcess, AProgramThatCannotStartSaysWhy) {
  TempDirectory dir;
  BackgroundProcess missing({"kiln-no-such-program"}, {}, dir / "log");
  EXPECT_EQ(missing.pid(), -1);
  EXPECT_NE(missing.log().find("could not start kiln-no-such-program"), std::string::npos)
      << missing.log();
}

TEST(BackgroundProcess, DiesWithTheThreadThatStartedItWhenNothingStoppedIt) {
  TempDirectory dir;
  std::unique_ptr<BackgroundProcess> orphan;
  std::thread([&] {
    orphan = std::make_unique<BackgroundProcess>(std::vector<std::string>{"sleep", "60"},
                                                 BackgroundProcess::Environment{}, dir / "log");
  }).join();
  ASSERT_GT(orphan->pid(), 0);
  EXPECT_TRUE(testing::wait_process_gone(orphan->pid(), 5000));
}

}  // namespace
}  // namespace kiln
