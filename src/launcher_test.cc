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
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(Launcher, NamedAndWrap) {
  if (!which("ccache")) GTEST_SKIP() << "ccache is not installed (scripts/install-deps.sh)";
  Launcher l = Launcher::named("ccache", {{"CCACHE_DIR", "/tmp/x"}});
  EXPECT_EQ(l.name, "ccache");
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
    EXPECT_STREQ(e.what(), "sccache not found");
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

int free_loopback_port() {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(s);
  return port;
}

bool accepts_connections(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(s);
  return ok;
}

// distcc for real: a distccd on 127.0.0.1 (never any other address) serves the compile.
TEST(Launcher, DistccCompilesThroughALoopbackDaemon) {
  if (!which("distcc") || !which("distccd"))
    GTEST_SKIP() << "distcc/distccd are not installed (scripts/install-deps.sh)";
  TempDirectory state;
  // distccd run as root drops to `nobody`, which must be able to reach and write its log and
  // pid file: a directory of their own, world-writable and sticky like /tmp.
  TempDirectory shared;
  ::chmod(shared.path().c_str(), 01777);
  fs::path log = shared / "distccd.log", pid_file = shared / "distccd.pid";
  int port = free_loopback_port();
  ASSERT_GT(port, 0);
  auto daemon = std::async(std::launch::async, [&] {
    return run({.argv = {"distccd", "--no-detach", "--daemon", "--listen", "127.0.0.1", "--allow",
                         "127.0.0.1", "--port", std::to_string(port), "--user", "nobody", "--jobs",
                         "2", "--log-file", log.string(), "--pid-file", pid_file.string(),
                         "--log-level", "info"},
                .timeout = 60s});
  });
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!accepts_connections(port) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(accepts_connections(port)) << "distccd did not start: " << testing::read_file(log);

  fs::create_directory(state / "client");
  Launcher distcc = Launcher::distcc({{"DISTCC_HOSTS", "127.0.0.1:" + std::to_string(port)},
                                      {"DISTCC_FALLBACK", "0"},
                                      {"DISTCC_DIR", (state / "client").string()}});
  TempDirectory work;
  std::ofstream(work / "add.c") << "int add(int a, int b) { return a + b; }\n";
  std::string error;
  try {
    cc::create_object(work / "add.o", {work / "add.c"},
                      {.cc = "gcc", .cwd = work.path(), .launcher = distcc});
  } catch (const Error& e) {
    error = e.what();
  }
  // The daemon writes its job summary after the client has its object: wait for it before
  // stopping the daemon, or the summary can be cut off.
  auto summary_deadline = std::chrono::steady_clock::now() + 10s;
  while (testing::read_file(log).find("COMPILE_OK") == std::string::npos &&
         std::chrono::steady_clock::now() < summary_deadline) {
    std::this_thread::sleep_for(10ms);
  }
  // Stop the daemon's whole process group (it pre-forks workers).
  pid_t pid = 0;
  std::ifstream(pid_file) >> pid;
  EXPECT_GT(pid, 0) << "no pid file from distccd";
  if (pid > 0) ::kill(-pid, SIGTERM);
  RunResult daemon_result = daemon.get();
  EXPECT_FALSE(daemon_result.timed_out) << "distccd did not stop on SIGTERM";
  EXPECT_EQ(error, "");
  EXPECT_TRUE(fs::exists(work / "add.o"));
  EXPECT_NE(testing::read_file(log).find("COMPILE_OK"), std::string::npos)
      << testing::read_file(log);
}

}  // namespace
}  // namespace kiln
