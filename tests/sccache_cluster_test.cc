// SccacheCluster (src/testing/sccache_cluster.h), the harness under the sccache-dist tests: a
// compile by the sccache client on the client host runs on the build server (the client's stats
// and the scheduler's log agree), and nothing of the cluster is left after its destructor.
#include "testing/sccache_cluster.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cluster_support.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::NamespaceNetwork;
using testing::SccacheCluster;

// `sccache <args>` on the client host, through the cluster's probe server.
RunResult sccache_on_client(const SccacheCluster& cluster, const std::vector<std::string>& args) {
  std::vector<std::string> argv = cluster.client_prefix();
  argv.push_back(KILN_SCCACHE_BIN_DIR "/sccache");
  argv.insert(argv.end(), args.begin(), args.end());
  return run({.argv = argv, .env = cluster.probe_env(), .merge_stderr = false, .timeout = 60s});
}

TEST(SccacheCluster, ACompileOnTheClientHostRunsOnTheBuildServer) {
  NamespaceNetwork net(3);
  SccacheCluster cluster(net, {.servers = 1});
  KILN_REQUIRE_CLUSTER(cluster);
  TempDirectory work;
  std::ofstream(work / "tiny.c") << "int triple(int x) { return 3 * x; }\n";

  RunResult compiled = sccache_on_client(
      cluster, {"gcc", "-c", (work / "tiny.c").string(), "-o", (work / "tiny.o").string()});
  ASSERT_TRUE(compiled.ok()) << compiled.output << compiled.error_output << cluster.logs();
  EXPECT_TRUE(fs::is_regular_file(work / "tiny.o"));

  RunResult stats = sccache_on_client(cluster, {"--show-stats", "--stats-format", "json"});
  ASSERT_TRUE(stats.ok()) << stats.error_output;
  nlohmann::json dist = nlohmann::json::parse(stats.output)["stats"]["dist_compiles"];
  EXPECT_EQ(dist.value(cluster.server_address(0), 0), 1) << stats.output;
  EXPECT_EQ(cluster.completed_jobs(1)[cluster.server_address(0)], 1) << cluster.logs();
}

TEST(SccacheCluster, NothingIsLeftAfterTheDestructor) {
  NamespaceNetwork net(4);
  testing::expect_nothing_left_after_destructor(
      [&] {
        return std::make_unique<SccacheCluster>(net, testing::SccacheClusterOptions{.servers = 2});
      },
      4);
}

}  // namespace
}  // namespace kiln
