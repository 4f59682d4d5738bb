#include "kiln/file_lock.h"

#include <signal.h>

#include <fstream>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(FileLock, HeaderExample) {
  TempDirectory dir;
  fs::path path = dir / "cache.lock";
  {
    FileLock lock(path);
    EXPECT_TRUE(lock.held());
    EXPECT_TRUE(fs::exists(path));
    EXPECT_FALSE(FileLock::try_lock(path).has_value()) << "a second lock in the same process waits";
  }
  auto again = FileLock::try_lock(path);
  ASSERT_TRUE(again.has_value());
  again->release();
  EXPECT_FALSE(again->held());
  again->release();  // idempotent
  EXPECT_TRUE(FileLock::lock_for(path, 1s).has_value());
}

TEST(FileLock, SeedSpellingAndNoTruncation) {
  TempDirectory dir;
  fs::path path = dir / "data";
  std::ofstream(path) << "keep me";
  FileLock lock = filelock(path);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep me");
}

TEST(FileLock, TimedLockTimesOut) {
  TempDirectory dir;
  fs::path path = dir / "busy.lock";
  FileLock holder(path);
  auto start = std::chrono::steady_clock::now();
  std::optional<FileLock> waiter = FileLock::lock_for(path, 150ms);
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(waiter.has_value());
  EXPECT_GE(waited, 150ms);
}

TEST(FileLock, UnopenablePathIsAClearError) {
  try {
    FileLock lock("/no/such/dir/x.lock");
    FAIL();
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/dir/x.lock"), std::string::npos) << e.what();
  }
}

TEST(FileLock, FourProcessesIncrementACounterExactly) {
  TempDirectory dir;
  std::string lock = (dir / "counter.lock").string();
  std::string counter = (dir / "counter").string();
  std::ofstream(counter) << 0;
  std::vector<std::future<RunResult>> runs;
  for (int i = 0; i < 4; ++i) {
    runs.push_back(std::async(std::launch::async, [&] {
      return run(
          {.argv = testing::child_argv("lock-increment", {lock, counter, "500"}), .timeout = 120s});
    }));
  }
  for (auto& r : runs) {
    RunResult result = r.get();
    EXPECT_TRUE(result.ok()) << result.status_text() << result.output;
  }
  long value = 0;
  std::ifstream(counter) >> value;
  EXPECT_EQ(value, 2000);
}

TEST(FileLock, WaiterProceedsWhenTheHolderIsKilled) {
  TempDirectory dir;
  std::string lock = (dir / "held.lock").string();
  std::string ready = (dir / "ready").string();
  auto holder = std::async(std::launch::async, [&] {
    return run({.argv = testing::child_argv("lock-hold", {lock, ready}), .timeout = 60s});
  });
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!fs::exists(ready) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(fs::exists(ready));
  pid_t pid = 0;
  std::ifstream(ready) >> pid;
  ASSERT_GT(pid, 0);
  EXPECT_FALSE(FileLock::try_lock(lock).has_value()) << "the holder has it";

  auto waiter = std::async(std::launch::async, [&] { return FileLock(lock).held(); });
  EXPECT_EQ(waiter.wait_for(200ms), std::future_status::timeout) << "the waiter must block";
  ::kill(pid, SIGKILL);
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready) << "the lock died with its holder";
  EXPECT_TRUE(waiter.get());
  EXPECT_EQ(holder.get().signal, SIGKILL);
}

}  // namespace
}  // namespace kiln
