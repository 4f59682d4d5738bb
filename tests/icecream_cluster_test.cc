// IcecreamCluster (src/testing/icecream_cluster.h), the harness under the icecream tests: a compile
// by the icecc client on the client host runs on a server (icecc's own log, read by
// icecc_account, and the scheduler's log agree) and gives the object a local compile gives; a
// server killed mid-compile makes icecc compile locally, which the account says; nothing of the
// cluster is left after its destructor.
#include "testing/icecream_cluster.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "builder/icecc_account.h"
#include "cluster_support.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using build::detail::EngineAccount;
using build::detail::icecc_account;
using testing::IcecreamCluster;
using testing::NamespaceNetwork;
using testing::read_file;

// `icecc gcc -O2 -c <source> -o <object>` on the client host, logging to `log`.
RunResult icecc_compile(const IcecreamCluster& cluster, const fs::path& source,
                        const fs::path& object, const fs::path& log) {
  std::vector<std::string> argv = cluster.client_prefix();
  argv.insert(argv.end(), {"icecc", "gcc", "-O2", "-c", source.string(), "-o", object.string()});
  IcecreamCluster::Environment env = cluster.client_env();
  for (const auto& [name, value] : icecc_log_env(log)) env[name] = value;
  return run({.argv = argv, .env = env, .merge_stderr = false, .timeout = 120s});
}

TEST(IcecreamCluster, ACompileOnTheClientHostRunsOnAServer) {
  NamespaceNetwork net(4);
  IcecreamCluster cluster(net, {.servers = 2});
  KILN_REQUIRE_CLUSTER(cluster);
  TempDirectory work;
  std::ofstream(work / "tiny.c") << "int triple(int x) { return 3 * x; }\n";

  RunResult compiled = icecc_compile(cluster, work / "tiny.c", work / "tiny.o", work / "icecc.log");
  ASSERT_TRUE(compiled.ok()) << compiled.output << compiled.error_output << cluster.logs();
  EngineAccount account = icecc_account(read_file(work / "icecc.log"));
  EXPECT_EQ(account.ran, "remote") << account.detail << "\n" << read_file(work / "icecc.log");
  ASSERT_EQ(account.hosts.size(), 1u) << account.detail;
  std::string host = account.hosts[0];
  EXPECT_TRUE(host == cluster.server_address(0) || host == cluster.server_address(1)) << host;
  EXPECT_EQ(cluster.completed_jobs(1), (std::map<std::string, int>{{host, 1}})) << cluster.logs();

  RunResult local = run(
      {.argv = {"gcc", "-O2", "-c", (work / "tiny.c").string(), "-o", (work / "local.o").string()},
       .timeout = 60s});
  ASSERT_TRUE(local.ok()) << local.output;
  EXPECT_EQ(read_file(work / "tiny.o"), read_file(work / "local.o"));
}

// Long enough to compile that the server can be killed while it does: a second or more at -O2.
std::string slow_source() {
  std::string code;
  for (int i = 0; i < 600; ++i) {
    code += fmt::format(
        "int f{0}(int x) {{ int s = 0; for (int j = 0; j < x; j++) s += j * {0} ^ (s >> 3); "
        "return s; }}\n",
        i);
  }
  return code;
}

TEST(IcecreamCluster, AServerKilledMidCompileMakesIceccCompileLocally) {
  NamespaceNetwork net(3);
  IcecreamCluster cluster(net, {.servers = 1});
  KILN_REQUIRE_CLUSTER(cluster);
  TempDirectory work;
  std::ofstream(work / "slow.c") << slow_source();

  auto compiled = std::async(std::launch::async, [&] {
    return icecc_compile(cluster, work / "slow.c", work / "slow.o", work / "icecc.log");
  });
  // Kill the server once it compiles: its log says so when it has received the job.
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (read_file(cluster.directory() / "server0.log").find("remote compile for file") ==
             std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  cluster.kill_server(0);
  RunResult result = compiled.get();
  ASSERT_TRUE(result.ok()) << result.output << result.error_output << cluster.logs();
  EngineAccount account = icecc_account(read_file(work / "icecc.log"));
  EXPECT_EQ(account.ran, "local") << account.detail;
  EXPECT_NE(
      account.detail.find("after the remote compile on " + cluster.server_address(0) + " failed"),
      std::string::npos)
      << account.detail;
  EXPECT_TRUE(fs::is_regular_file(work / "slow.o"));
}

TEST(IcecreamCluster, NothingIsLeftAfterTheDestructor) {
  NamespaceNetwork net(4);
  testing::expect_nothing_left_after_destructor(
      [&] {
        return std::make_unique<IcecreamCluster>(net,
                                                 testing::IcecreamClusterOptions{.servers = 2});
      },
      4);
}

}  // namespace
}  // namespace kiln
