// A real sccache-dist cluster on the hosts of a NamespaceNetwork: the scheduler on host 0, build
// server i on host 1+i, and the client on the host after them. Keys and tokens come from
// `sccache-dist auth`, configs live in the cluster's own temp dir, and every process is started
// (SCCACHE_NO_DAEMON=1, through `ip netns exec`) as a direct child whose pid the cluster holds;
// the destructor stops them all and removes the temp dir, even when the test failed.
//
//   kiln::testing::NamespaceNetwork net(4);
//   if (!net.available()) GTEST_SKIP() << net.why();
//   kiln::testing::SccacheCluster cluster(net, {.servers = 2});
//   if (cluster.missing_prerequisite()) GTEST_SKIP() << cluster.why();
//   ASSERT_TRUE(cluster.available()) << cluster.why();
//   auto argv = cluster.client_prefix();            // ip netns exec <client host>
//   argv.insert(argv.end(), {KILN_BINARY, "build", ..., "--launcher", "sccache"});
//   kiln::run({.argv = argv, .env = cluster.client_env(), .timeout = ...});
//   cluster.completed_jobs();                        // {{"10.x.y.2:10501", 40}, ...}
//
// The build servers use sccache's overlay builder, which needs root, overlayfs and bubblewrap.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/temp_directory.h"
#include "testing/background_process.h"
#include "testing/namespace_network.h"

namespace kiln::testing {

struct SccacheClusterOptions {
  // Build servers, 1..n; the network needs servers + 2 hosts.
  int servers = 1;
  // Where sccache and sccache-dist are; KILN_SCCACHE_BIN_DIR (.deps/sccache/bin) by default.
  std::string bin_dir{};
};

class SccacheCluster {
 public:
  using Environment = BackgroundProcess::Environment;

  // Starts the cluster and waits (at most 30 s) until the scheduler, asked from the client
  // host, reports every build server. available() is false and why() says why when a tool is
  // missing or the cluster did not come up (with the logs).
  SccacheCluster(const NamespaceNetwork& net, SccacheClusterOptions options);
  ~SccacheCluster();
  SccacheCluster(const SccacheCluster&) = delete;
  SccacheCluster& operator=(const SccacheCluster&) = delete;

  bool available() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  // True when the cluster could not even be tried (no root, netns, sccache or bwrap): a test
  // skips then, and fails when the cluster was tried and did not come up.
  bool missing_prerequisite() const { return !available() && !tried_; }

  // The environment of a client (kiln, or sccache itself) on the client host: SCCACHE_CONF,
  // SCCACHE_DIR, PATH with the sccache directory first. SCCACHE_SERVER_UDS is left to the client.
  Environment client_env() const;
  // client_env() plus the socket of a client server the cluster runs on the client host (it
  // asked the scheduler for the status), for `sccache <compiler> ...` by hand.
  Environment probe_env() const;
  // `ip netns exec <client host>`.
  std::vector<std::string> client_prefix() const;
  // "http://<host 0>:10600".
  std::string scheduler_url() const;
  // Build server i's "address:port", as sccache's stats and the scheduler name it.
  std::string server_address(int server) const;
  int servers() const { return static_cast<int>(servers_.size()); }
  // SIGKILLs build server i (and whatever it runs), as a machine that dies.
  void kill_server(int server);
  // Jobs the scheduler saw completed, per build server, from its own log: what ran remotely,
  // independent of any client's account.
  std::map<std::string, int> completed_jobs() const;
  // Every process's log, for failure messages.
  std::string logs() const;
  // The pids of the scheduler, the build servers and the probe (for tests of the harness).
  std::vector<pid_t> pids() const;
  // The temp dir holding configs, caches and logs; removed by the destructor.
  const std::filesystem::path& directory() const { return dir_.path(); }

 private:
  bool find_tools();
  bool write_configs();
  bool start();
  bool wait_for_servers();
  std::optional<std::string> dist_tool(const std::vector<std::string>& args);
  std::unique_ptr<BackgroundProcess> start_on(int host, const std::vector<std::string>& argv,
                                              const Environment& env, const std::string& log);
  void unmount_leftovers() const;

  const NamespaceNetwork& net_;
  SccacheClusterOptions options_;
  TempDirectory dir_;
  std::string client_token_;
  std::unique_ptr<BackgroundProcess> scheduler_;
  std::vector<std::unique_ptr<BackgroundProcess>> servers_;
  std::unique_ptr<BackgroundProcess> probe_;
  std::string why_;
  bool tried_ = false;
};

}  // namespace kiln::testing
