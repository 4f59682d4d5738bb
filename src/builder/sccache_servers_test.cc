// sccache's account of a job: its statistics parsed, the difference classified, and a real
// sccache server of kiln's (no cluster: compiles run locally, then come from its cache).
#include "sccache_servers.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"

namespace kiln::build::detail {
namespace {

namespace fs = std::filesystem;

// The shape `sccache --show-stats --stats-format json` (0.16) prints, trimmed to what kiln reads.
std::string stats_json(long hits, long misses, std::string_view dist, long dist_errors = 0,
                       long not_compile = 0) {
  return fmt::format(
      R"({{"stats": {{"compile_requests": 3, "cache_hits": {{"counts": {{"C/C++": {}}},
      "adv_counts": {{}}}}, "cache_misses": {{"counts": {{"C/C++": {}}}, "adv_counts": {{}}}},
      "dist_compiles": {{{}}}, "dist_errors": {}, "requests_not_compile": {},
      "requests_unsupported_compiler": 0, "non_cacheable_compilations": 0,
      "compile_fails": 0}}, "version": "0.16.0"}})",
      hits, misses, dist, dist_errors, not_compile);
}

SccacheStats stats(long hits, long misses, std::string_view dist, long errors = 0,
                   long not_compile = 0) {
  return parse_sccache_stats(stats_json(hits, misses, dist, errors, not_compile));
}

TEST(SccacheAccount, ParsesTheCountersThatSayWhereCompilesRan) {
  SccacheStats s = stats(2, 5, R"("10.0.0.2:10501": 3, "10.0.0.3:10501": 1)", 1, 4);
  EXPECT_EQ(s.hits, 2);
  EXPECT_EQ(s.misses, 5);
  EXPECT_EQ(s.dist_errors, 1);
  EXPECT_EQ(s.not_compile, 4);
  EXPECT_EQ(s.dist.at("10.0.0.2:10501"), 3);
  EXPECT_THROW(parse_sccache_stats(R"({"stats": {}})"), UnexpectedOutput);
  EXPECT_THROW(parse_sccache_stats("Compile requests 0"), UnexpectedOutput);
}

TEST(SccacheAccount, EachWayAJobCanGo) {
  SccacheStats before = stats(1, 1, R"("a:1": 1)");
  EngineAccount remote = sccache_account(before, stats(1, 2, R"("a:1": 1, "b:1": 1)"));
  EXPECT_EQ(remote.ran, "remote");
  EXPECT_EQ(remote.detail, "sccache: 1 compile on b:1");
  EXPECT_EQ(remote.hosts, std::vector<std::string>{"b:1"});

  EngineAccount mixed = sccache_account(before, stats(1, 4, R"("a:1": 3)"));
  EXPECT_EQ(mixed.ran, "mixed");
  EXPECT_EQ(mixed.detail, "sccache: 2 of 3 compiles on a:1, 1 locally");

  EngineAccount fell_back = sccache_account(before, stats(1, 2, R"("a:1": 1)", 1));
  EXPECT_EQ(fell_back.ran, "local");
  EXPECT_EQ(fell_back.detail, "sccache: 1 compile locally after 1 failed distribution (fell back)");

  EngineAccount cached = sccache_account(before, stats(3, 1, R"("a:1": 1)"));
  EXPECT_EQ(cached.ran, "engine-cache");
  EXPECT_EQ(cached.detail, "sccache: 2 cache hits");

  EngineAccount link = sccache_account(before, stats(1, 1, R"("a:1": 1)", 0, 1));
  EXPECT_EQ(link.ran, "local");
  EXPECT_EQ(link.detail, "sccache: not a compile it caches or distributes; ran as is");
}

TEST(SccacheAccount, DistStatusSaysWhetherThereIsAClusterToUse) {
  DistStatus up = parse_dist_status(
      R"({"SchedulerStatus":["http://10.0.0.1:10600/",{"num_servers":2,"num_cpus":4,"in_progress":0}]})");
  EXPECT_EQ(up.scheduler, "http://10.0.0.1:10600/");
  EXPECT_EQ(up.servers, 2);
  EXPECT_EQ(up.cpus, 4);
  EXPECT_EQ(up.problem, "");
  EXPECT_NE(parse_dist_status(R"({"Disabled":"disabled"})").problem.find("not configured"),
            std::string::npos);
  EXPECT_NE(parse_dist_status(R"({"NotConnected":["http://x/","will retry"]})")
                .problem.find("cannot be reached"),
            std::string::npos);
  EXPECT_NE(parse_dist_status("garbage").problem.find("unexpected output"), std::string::npos);
}

// Whether a process whose environment names `socket` as its sccache server is alive.
bool serving(const fs::path& socket) {
  std::string wanted = "SCCACHE_SERVER_UDS=" + socket.string();
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    try {
      std::string environ = internal::read_file(entry.path() / "environ");
      std::string comm = internal::read_file(entry.path() / "comm");
      if (comm.starts_with("sccache") && environ.find(wanted + '\0') != std::string::npos) {
        return true;
      }
    } catch (const Error&) {  // NOLINT(bugprone-empty-catch): gone meanwhile, or not ours to read
    }
  }
  return false;
}

// A real sccache server of kiln's, with a config of its own and no cluster: the first compile
// runs locally, the same compile again comes from sccache's cache, and the server is gone after.
TEST(SccacheServersReal, AccountsForALocalCompileThenACacheHitAndStopsItsServer) {
  std::optional<fs::path> sccache = which("sccache");
  fs::path deps = fs::path(KILN_SCCACHE_BIN_DIR) / "sccache";
  if (!sccache && fs::exists(deps)) sccache = deps;
  if (!sccache) GTEST_SKIP() << "sccache is not installed (scripts/install-deps.sh installs it)";
  std::optional<fs::path> gcc = which("gcc");
  if (!gcc) GTEST_SKIP() << "gcc is not installed";
  TempDirectory work;
  internal::write_file(work.path() / "config", fmt::format("[cache.disk]\ndir = \"{}\"\n",
                                                           (work.path() / "cache").string()));
  internal::write_file(work.path() / "add.c", "int add(int a, int b) { return a + b; }\n");
  fs::path socket;
  {
    SccacheServers servers(sccache->string(), work.path(),
                           {{"SCCACHE_CONF", (work.path() / "config").string()},
                            {"SCCACHE_DIR", (work.path() / "cache").string()}});
    auto compile = [&] {
      RunResult r = run({.argv = {sccache->string(), gcc->string(), "-c", "add.c", "-o", "add.o"},
                         .cwd = work.path(),
                         .env = servers.client_env(0),
                         .timeout = std::chrono::seconds(60)});
      ASSERT_TRUE(r.ok()) << r.output;
    };
    SccacheStats before = servers.stats(0);
    compile();
    EngineAccount first = sccache_account(before, servers.stats(0));
    EXPECT_EQ(first.ran, "local") << first.detail;
    EXPECT_EQ(first.detail, "sccache: 1 compile locally");
    fs::remove(work.path() / "add.o");
    before = servers.stats(0);
    compile();
    EngineAccount second = sccache_account(before, servers.stats(0));
    EXPECT_EQ(second.ran, "engine-cache") << second.detail;
    EXPECT_TRUE(internal::is_file(work.path() / "add.o"));
    EXPECT_NE(servers.dist_status(0).problem.find("not configured"), std::string::npos);
    socket = work.path() / "sccache-0.sock";
    EXPECT_TRUE(serving(socket));
  }
  EXPECT_FALSE(serving(socket)) << "kiln's sccache server outlived the build";
}

}  // namespace
}  // namespace kiln::build::detail
