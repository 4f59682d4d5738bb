#include "kiln/temp_directory.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/process.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(TempDirectory, HeaderExample) {
  fs::path where;
  {
    TempDirectory tmp;
    where = tmp.path();
    std::ofstream(tmp / "add.c") << "int add(int a, int b) { return a + b; }";
    EXPECT_TRUE(fs::is_regular_file(tmp.relpath("add.c")));
    EXPECT_EQ(tmp.listdir(), std::vector<std::string>{"add.c"});
    EXPECT_FALSE(tmp.kept());
    struct stat st {};
    ASSERT_EQ(::stat(where.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
  }
  EXPECT_FALSE(fs::exists(where)) << "the destructor removes the directory";
}

TEST(TempDirectory, RemoveIsExplicitAndIdempotent) {
  TempDirectory tmp;
  fs::path where = tmp.path();
  fs::create_directories(tmp / "a" / "b");
  std::ofstream(tmp / "a" / "b" / "c") << "x";
  tmp.remove();
  EXPECT_FALSE(fs::exists(where));
  EXPECT_TRUE(tmp.path().empty());
  tmp.remove();
}

TEST(TempDirectory, MoveTransfersOwnership) {
  TempDirectory a;
  fs::path where = a.path();
  TempDirectory b = std::move(a);
  EXPECT_TRUE(
      a.path().empty());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_EQ(b.path(), where);
  EXPECT_TRUE(fs::exists(where));
}

TEST(TempDirectory, CustomPathIsMadeExactlyAndMustNotExist) {
  TempDirectory parent;
  fs::path custom = parent / "exact";
  {
    TempDirectory tmp = tempdir(custom);
    EXPECT_EQ(tmp.path(), custom);
    EXPECT_TRUE(fs::is_directory(custom));
    EXPECT_THROW(tempdir(custom), SystemError) << "an existing custom path is an error";
  }
  EXPECT_FALSE(fs::exists(custom));
}

// Checks the seed's debug path: <root>/kiln-debug-mode-tempdirs/<stamp>___<random>/<expected>.
void expect_debug_path(const TempDirectory& dir, const std::string& expected_basename) {
  EXPECT_TRUE(dir.kept());
  EXPECT_EQ(dir.path().filename().string(), expected_basename);
  std::string parent = dir.path().parent_path().filename().string();
  EXPECT_EQ(dir.path().parent_path().parent_path().filename().string(), "kiln-debug-mode-tempdirs");
  std::smatch m;
  ASSERT_TRUE(
      std::regex_match(parent, m, std::regex(R"((\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})___\w+)")))
      << parent;
  std::tm tm{};
  std::istringstream(m[1].str()) >> std::get_time(&tm, "%Y-%m-%dT%H-%M-%S");
  tm.tm_isdst = -1;
  double age = std::difftime(std::time(nullptr), std::mktime(&tm));
  EXPECT_LT(std::abs(age), 60.0) << "the stamp is the creation time";
}

// The seed's test_tempdir, step for step. It ends the process's temp-dir life (creation after
// the exit cleanup fails), so it runs in a child process: TempDirectory.SeedSequence starts it.
TEST(TempDirectoryChild, DISABLED_SeedSequence) {
  ASSERT_FALSE(keep_for_debug()) << "don't submit with keep-for-debug on";
  TempDirectory temp_dir = tempdir();
  ASSERT_TRUE(fs::exists(temp_dir.path()));

  std::vector<fs::path> made;
  for (int number = 0; number < 3; ++number) {
    auto keep = set_keep_for_debug();
    TempDirectory debug_dir = tempdir();
    expect_debug_path(debug_dir, "0000" + std::to_string(number));
    made.push_back(debug_dir.path());
  }
  {
    auto keep = set_keep_for_debug();
    TempDirectory debug_dir = tempdir();  // two within the same scope
    expect_debug_path(debug_dir, "00003");
    made.push_back(debug_dir.path());
    TempDirectory second = tempdir();
    expect_debug_path(second, "00004");
    made.push_back(second.path());
    {
      auto no_keep = set_keep_for_debug(false);
      TempDirectory deleted = tempdir();  // this one is removed by the exit cleanup
      const fs::path& deleted_path = deleted.path();
      remove_tempdirs();  // simulate the at-exit hook
      EXPECT_FALSE(fs::exists(deleted_path));
      remove_tempdirs();  // calling it twice is a no-op
      EXPECT_THROW(tempdir(), DirectoryCreatedPastAtExit);
    }
    EXPECT_TRUE(keep_for_debug()) << "the inner switch restored the outer value";
  }
  EXPECT_FALSE(keep_for_debug());
  EXPECT_FALSE(fs::exists(temp_dir.path())) << "the exit cleanup removed the live directory";
  for (const fs::path& p : made) {
    EXPECT_TRUE(fs::is_directory(p)) << "kept directories survive the cleanup: " << p;
    fs::remove_all(p);
  }
  fs::remove(made.front().parent_path());
}

TEST(TempDirectory, SeedSequence) {
  RunResult r = run({.argv = {testing::self_exe(), "--gtest_also_run_disabled_tests",
                              "--gtest_filter=TempDirectoryChild.DISABLED_SeedSequence"},
                     .timeout = 60s});
  EXPECT_TRUE(r.ok()) << r.output;
  EXPECT_NE(r.output.find("[  PASSED  ] 1 test"), std::string::npos) << r.output;
}

TEST(TempDirectory, KeepForDebugArgumentOverridesTheSwitch) {
  TempDirectory kept = tempdir({}, true);
  EXPECT_TRUE(kept.kept());
  fs::path where = kept.path();
  kept.remove();
  EXPECT_TRUE(fs::exists(where)) << "kept directories are never removed by kiln";
  fs::remove_all(where);
  auto keep = set_keep_for_debug();
  TempDirectory not_kept = tempdir({}, false);
  EXPECT_FALSE(not_kept.kept());
}

TEST(TempDirectory, SharedDebugRootMustBeOwnedAndPrivate) {
  TempDirectory fake_tmp;
  const char* old = std::getenv("TMPDIR");
  std::string saved = old != nullptr ? old : "";
  ::setenv("TMPDIR", fake_tmp.path().c_str(), 1);
  fs::create_directory(fake_tmp / "kiln-debug-mode-tempdirs");
  ::chmod((fake_tmp / "kiln-debug-mode-tempdirs").c_str(), 0777);
  // A fresh process, so that its timestamped parent is made under this TMPDIR.
  RunResult r = run({.argv = {testing::self_exe(), "--gtest_also_run_disabled_tests",
                              "--gtest_filter=TempDirectoryChild.DISABLED_DebugRootRefused"},
                     .timeout = 60s});
  if (old != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  EXPECT_TRUE(r.ok()) << r.output;
  EXPECT_NE(r.output.find("[  PASSED  ] 1 test"), std::string::npos) << r.output;
}

TEST(TempDirectoryChild, DISABLED_DebugRootRefused) {
  try {
    tempdir({}, true);
    FAIL() << "a world-writable shared root was accepted";
  } catch (const UnusableDirectory& e) {
    EXPECT_NE(std::string(e.what()).find("writable by other users"), std::string::npos) << e.what();
    EXPECT_EQ(e.path().filename(), "kiln-debug-mode-tempdirs");
  }
}

TEST(TempDirectory, SigtermRemovesLiveDirectoriesWhenOptedIn) {
  TempDirectory scratch;
  std::string ready = (scratch / "ready").string();
  std::optional<RunResult> result;
  std::thread holder([&] {
    result = run({.argv = testing::child_argv("tempdirs-hold", {ready}), .timeout = 30s});
  });
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!fs::exists(ready) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(fs::exists(ready)) << "the child never reported its directories";
  std::vector<std::string> dirs;
  {
    std::ifstream in(ready);
    for (std::string line; std::getline(in, line);) dirs.push_back(line);
  }
  ASSERT_EQ(dirs.size(), 3u);
  for (const auto& d : dirs) EXPECT_TRUE(fs::exists(d));
  // Find the child's pid among our grandchildren: the holder thread's run() owns it.
  pid_t child = 0;
  for (pid_t pid : testing::child_pids()) {
    std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
    std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (text.find("tempdirs-hold") != std::string::npos) child = pid;
  }
  ASSERT_NE(child, 0);
  ::kill(child, SIGTERM);
  holder.join();
  ASSERT_TRUE(result.has_value());
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(result->signal, SIGTERM) << "the signal takes its course after the cleanup";
  for (const auto& d : dirs) EXPECT_FALSE(fs::exists(d)) << d << " survived SIGTERM";
}

TEST(TempDirectory, ConcurrentCreationFromManyThreads) {
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<fs::path> seen;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        TempDirectory d;
        std::lock_guard lock(mu);
        EXPECT_TRUE(seen.insert(d.path()).second);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& p : seen) EXPECT_FALSE(fs::exists(p));
}

}  // namespace
}  // namespace kiln
