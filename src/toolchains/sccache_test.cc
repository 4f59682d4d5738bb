// sccache's statistics and --dist-status read as sccache 0.16 prints them, and a real private
// server of kiln's: it listens on its own socket, answers, says why when it cannot start, and
// leaves no process behind.
#include "kiln/sccache.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln::sccache {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(SccacheStats, ReadsTheCountersThatSayWhereCompilesRan) {
  Stats s = parse_stats(
      R"({"stats":{"compile_requests":9,"cache_hits":{"counts":{"C/C++":2,"CUDA":1}},)"
      R"("cache_misses":{"counts":{"C/C++":5}},"dist_compiles":{"10.0.0.2:10501":3,)"
      R"("10.0.0.3:10501":1},"dist_errors":1,"requests_not_compile":4,)"
      R"("requests_unsupported_compiler":0,"non_cacheable_compilations":0,"compile_fails":0},)"
      R"("version":"0.16.0"})");
  EXPECT_EQ(s.hits, 3);
  EXPECT_EQ(s.misses, 5);
  EXPECT_EQ(s.dist_errors, 1);
  EXPECT_EQ(s.not_compile, 4);
  EXPECT_EQ(s.dist.at("10.0.0.2:10501"), 3);
  EXPECT_EQ(s.dist.at("10.0.0.3:10501"), 1);
  EXPECT_THROW(parse_stats(R"({"stats": {}})"), UnexpectedOutput);
  EXPECT_THROW(parse_stats("Compile requests 0"), UnexpectedOutput);
}

TEST(SccacheDistStatus, EachAnswerAndWhatItMeansForABuild) {
  DistStatus up = parse_dist_status(
      R"({"SchedulerStatus":["http://127.0.0.1:10600/",{"num_servers":2,"num_cpus":16,)"
      R"("in_progress":0}]})");
  EXPECT_EQ(up.state, DistStatus::State::ok);
  EXPECT_EQ(up.url, "http://127.0.0.1:10600/");
  EXPECT_EQ(up.servers, 2);
  EXPECT_EQ(up.cpus, 16);
  EXPECT_EQ(up.problem(), "");
  DistStatus empty = parse_dist_status(
      R"({"SchedulerStatus":["http://s:10600/",{"num_servers":0,"num_cpus":0}]})");
  EXPECT_EQ(empty.problem(), "the scheduler at http://s:10600/ has no build servers");
  DistStatus down = parse_dist_status(
      R"({"NotConnected":["http://127.0.0.1:10600/","enabled, not connected, will retry in 28.0s"]})");
  EXPECT_EQ(down.state, DistStatus::State::not_connected);
  EXPECT_EQ(down.message, "enabled, not connected, will retry in 28.0s");
  EXPECT_NE(down.problem().find("cannot be reached"), std::string::npos);
  DistStatus disabled = parse_dist_status(R"({"Disabled":"disabled"})");
  EXPECT_EQ(disabled.state, DistStatus::State::disabled);
  EXPECT_NE(disabled.problem().find("not configured"), std::string::npos);
  DistStatus garbage = parse_dist_status("sccache: error: couldn't connect to server");
  EXPECT_EQ(garbage.state, DistStatus::State::unreadable);
  EXPECT_NE(garbage.message.find("couldn't connect"), std::string::npos);
  EXPECT_NE(garbage.problem().find("unexpected output"), std::string::npos);
}

class SccacheServer : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<fs::path> found = which("sccache");
    fs::path deps = fs::path(KILN_SCCACHE_BIN_DIR) / "sccache";
    if (!found && fs::exists(deps)) found = deps;
    if (!found) GTEST_SKIP() << "sccache is not installed (scripts/install-deps.sh installs it)";
    sccache_ = *found;
  }
  Server::Options with_config(const std::string& text) {
    internal::write_file(dir_.path() / "config", text);
    return {.env = {{"SCCACHE_CONF", (dir_.path() / "config").string()}}, .own_cache = true};
  }

  fs::path sccache_;
  TempDirectory dir_;
};

TEST_F(SccacheServer, ListensOnItsOwnSocketAnswersAndIsGoneAfter) {
  pid_t pid = 0;
  {
    Server server(sccache_, with_config(""));
    ASSERT_EQ(server.start(), "");
    EXPECT_TRUE(server.running());
    EXPECT_EQ(server.dist_status().state, DistStatus::State::disabled);
    EXPECT_EQ(server.stats().misses, 0);
    std::string socket = server.client_env().at("SCCACHE_SERVER_UDS").value();
    EXPECT_TRUE(fs::exists(socket)) << socket;
    pid = testing::find_process_with("sccache", "SCCACHE_SERVER_UDS=" + socket);
    EXPECT_GT(pid, 0) << "no sccache process has " << socket << " in its environment";
  }
  EXPECT_TRUE(testing::wait_process_gone(pid, 5000)) << "kiln's sccache server outlived it";
}

TEST_F(SccacheServer, OneThatCannotStartSaysWhyAndRunsNothingAfter) {
  Server server(sccache_, with_config("this is [not toml\n"));
  std::string why = server.start();
  EXPECT_NE(why.find("exited at once"), std::string::npos) << why;
  EXPECT_NE(why.find("TOML parse error"), std::string::npos) << why;
  EXPECT_FALSE(server.running());
  RunResult r = server.command({"--show-stats"}, 5s);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.output.find("not running"), std::string::npos) << r.output;
  EXPECT_THROW(server.stats(), ToolFailed);
}

}  // namespace
}  // namespace kiln::sccache
