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
// The probe is the cluster's client-host process (ClusterBase::pids() and logs() name it last).
// The build servers use sccache's overlay builder, which needs root, overlayfs and bubblewrap.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "testing/cluster_base.h"

namespace kiln::testing {

struct SccacheClusterOptions {
  // Build servers, 1..n; the network needs servers + 2 hosts.
  int servers = 1;
  // Where sccache and sccache-dist are; KILN_SCCACHE_BIN_DIR (.deps/sccache/bin) by default.
  std::string bin_dir{};
};

class SccacheCluster : public ClusterBase {
 public:
  // Starts the cluster and waits (at most 30 s) until the scheduler, asked from the client
  // host, reports every build server. available() is false and why() says why when a tool is
  // missing or the cluster did not come up (with the logs); missing_prerequisite() is true when
  // root, netns, sccache or bwrap is missing.
  SccacheCluster(const NamespaceNetwork& net, SccacheClusterOptions options);
  ~SccacheCluster() override;
  SccacheCluster(const SccacheCluster&) = delete;
  SccacheCluster& operator=(const SccacheCluster&) = delete;

  // The environment of a client (kiln, or sccache itself) on the client host: SCCACHE_CONF,
  // SCCACHE_DIR, PATH with the sccache directory first. SCCACHE_SERVER_UDS is left to the client.
  Environment client_env() const;
  // client_env() plus the socket of a client server the cluster runs on the client host (the
  // probe, which asked the scheduler for the status), for `sccache <compiler> ...` by hand.
  Environment probe_env() const;
  // "http://<host 0>:10600".
  std::string scheduler_url() const;
  // Build server i's "address:port", as sccache's stats and the scheduler name it.
  std::string server_address(int server) const;
  // Jobs the scheduler saw completed, per build server, from its own log: what ran remotely,
  // independent of any client's account.
  std::map<std::string, int> completed_jobs() const override;
  using ClusterBase::completed_jobs;

 private:
  bool find_tools();
  bool write_configs();
  void start();
  bool wait_for_servers();
  std::optional<std::string> dist_tool(const std::vector<std::string>& args);
  void unmount_leftovers() const;

  SccacheClusterOptions options_;
  std::string client_token_;
};

}  // namespace kiln::testing
