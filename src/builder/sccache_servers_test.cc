// sccache's account of a job: the difference of its statistics classified, and kiln build's real
// sccache servers (no cluster: compiles run locally, then come from its cache).
#include "sccache_servers.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

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

sccache::Stats stats(long hits, long misses, std::string_view dist, long errors = 0,
                     long not_compile = 0) {
  return sccache::parse_stats(stats_json(hits, misses, dist, errors, not_compile));
}

TEST(SccacheAccount, EachWayAJobCanGo) {
  sccache::Stats before = stats(1, 1, R"("a:1": 1)");
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

// Whether an sccache process whose environment names `socket` as its server is alive.
bool serving(const fs::path& socket) {
  return testing::find_process_with("sccache", "SCCACHE_SERVER_UDS=" + socket.string()) > 0;
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
    SccacheServers servers(sccache->string(), {{"SCCACHE_CONF", (work.path() / "config").string()},
                                               {"SCCACHE_DIR", (work.path() / "cache").string()}});
    auto compile = [&] {
      RunResult r = run({.argv = {sccache->string(), gcc->string(), "-c", "add.c", "-o", "add.o"},
                         .cwd = work.path(),
                         .env = servers.client_env(0),
                         .timeout = std::chrono::seconds(60)});
      ASSERT_TRUE(r.ok()) << r.output;
    };
    sccache::Stats before = servers.stats(0);
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
    EXPECT_NE(servers.dist_status(0).problem().find("not configured"), std::string::npos);
    socket = servers.client_env(0).at("SCCACHE_SERVER_UDS").value();
    EXPECT_TRUE(serving(socket));
  }
  EXPECT_FALSE(serving(socket)) << "kiln's sccache server outlived the build";
}

}  // namespace
}  // namespace kiln::build::detail
