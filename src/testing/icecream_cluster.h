// A real icecream (icecc) cluster on the hosts of a NamespaceNetwork: icecc-scheduler on host 0,
// an iceccd compile server on each host 1..n, and on the host after them the client's own iceccd,
// which takes no jobs (`--no-remote -m 0`), so every compile icecc sends from the client host
// must run on a server. Each process is started through `ip netns exec` as a direct child whose
// pid the cluster holds; the destructor stops them all (and what they started) and removes the
// cluster's temp dir, even when the test failed.
//
//   kiln::testing::NamespaceNetwork net(4);
//   kiln::testing::IcecreamCluster cluster(net, {.servers = 2});
//   if (cluster.missing_prerequisite()) GTEST_SKIP() << cluster.why();
//   ASSERT_TRUE(cluster.available()) << cluster.why();
//   auto argv = cluster.client_prefix();               // ip netns exec <client host>
//   argv.insert(argv.end(), {"icecc", "gcc", "-c", "a.c", "-o", "a.o"});
//   kiln::run({.argv = argv, .env = cluster.client_env(), .timeout = ...});
//   cluster.completed_jobs();                           // {{"10.x.y.2:10245", 1}}
//
// What keeps the daemons apart on one machine. The network: each host has only lo and its eth0 on
// the namespaces' bridge, so icecream's UDP broadcasts (scheduler discovery) and its TCP ports
// (8765 scheduler, 10245 compile) never leave the namespaces; the daemons are also given the
// scheduler's address (-s) and a network name of the cluster's own (-n). The filesystem, which
// the namespaces share: an iceccd run as root listens for its local clients on
// /var/run/icecc/iceccd.socket, one path for all of them, so each daemon gets a socket of its own
// through ICECC_TEST_SOCKET (read by iceccd and by the icecc client alike: client_env() sets it),
// and its own environment directory (-b) and log (-l) in the cluster's temp dir. iceccd and
// icecc-scheduler started as root switch to the `icecc` user (`nobody` without one), so that
// temp dir is world-writable and sticky, like /tmp. The CPU: the daemons share one /proc/stat,
// and an iceccd on a busy machine reports its host as fully loaded, which the scheduler sends no
// job; so each server's iceccd runs under kiln_test_idle_host (tests/helpers/idle_host.cc), which
// shows it a /proc/stat that stands still: an idle host, as a server of its own would be.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "testing/cluster_base.h"

namespace kiln::testing {

struct IcecreamClusterOptions {
  // Compile servers, 1..n; the network needs servers + 2 hosts.
  int servers = 2;
  // Jobs each server runs at once (iceccd -m).
  int slots = 2;
};

// Stopping or killing a daemon ends its descendants first (ClusterBase's end_descendants): the
// compiles an iceccd runs are not always in its process group.
class IcecreamCluster : public ClusterBase {
 public:
  // Starts the cluster and waits (at most 30 s) until every daemon has logged in to the
  // scheduler. available() is false and why() says why when a tool is missing or the cluster did
  // not come up (with the logs); missing_prerequisite() is true when root, netns or icecc is
  // missing.
  IcecreamCluster(const NamespaceNetwork& net, IcecreamClusterOptions options);
  IcecreamCluster(const IcecreamCluster&) = delete;
  IcecreamCluster& operator=(const IcecreamCluster&) = delete;

  // The environment of an icecc client on the client host (kiln, or icecc itself): the client
  // daemon's socket (ICECC_TEST_SOCKET).
  Environment client_env() const;
  // Server i's "address:port" as the icecc client's log names it ("Have to use host ...").
  std::string server_address(int server) const;
  // Jobs the scheduler saw completed with status 0, per daemon's "address:port", from the
  // scheduler's own log: where compiles ran, independent of any client's account.
  std::map<std::string, int> completed_jobs() const override;
  using ClusterBase::completed_jobs;

 private:
  bool start();
  // Starts iceccd named `node` (-N, as the scheduler's log names it) with `extra` arguments: as
  // the next server, or as the client host's daemon when `client`.
  void start_daemon(const std::string& node, const std::vector<std::string>& extra, bool client);
  bool wait_for_logins();
  std::string address_of(const std::string& node) const;

  IcecreamClusterOptions options_;
  std::string netname_;
};

}  // namespace kiln::testing
