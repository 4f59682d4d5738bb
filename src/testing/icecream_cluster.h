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
// temp dir is world-writable and sticky, like /tmp.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/temp_directory.h"
#include "testing/background_process.h"
#include "testing/namespace_network.h"

namespace kiln::testing {

struct IcecreamClusterOptions {
  // Compile servers, 1..n; the network needs servers + 2 hosts.
  int servers = 2;
  // Jobs each server runs at once (iceccd -m).
  int slots = 2;
};

class IcecreamCluster {
 public:
  using Environment = BackgroundProcess::Environment;

  // Starts the cluster and waits (at most 30 s) until every daemon has logged in to the
  // scheduler. available() is false and why() says why when a tool is missing or the cluster did
  // not come up (with the logs).
  IcecreamCluster(const NamespaceNetwork& net, IcecreamClusterOptions options);
  ~IcecreamCluster();
  IcecreamCluster(const IcecreamCluster&) = delete;
  IcecreamCluster& operator=(const IcecreamCluster&) = delete;

  bool available() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  // True when the cluster could not even be tried (no root, netns or icecc): a test skips then,
  // and fails when the cluster was tried and did not come up.
  bool missing_prerequisite() const { return !available() && !tried_; }

  // The environment of an icecc client on the client host (kiln, or icecc itself): the client
  // daemon's socket (ICECC_TEST_SOCKET).
  Environment client_env() const;
  // `ip netns exec <client host>`.
  std::vector<std::string> client_prefix() const;
  // Server i's "address:port" as the icecc client's log names it ("Have to use host ...").
  std::string server_address(int server) const;
  int servers() const { return static_cast<int>(servers_.size()); }
  // SIGKILLs server i's iceccd and the compiles it runs, as a machine that dies.
  void kill_server(int server);
  // Jobs the scheduler saw completed with status 0, per daemon's "address:port", from the
  // scheduler's own log: where compiles ran, independent of any client's account.
  std::map<std::string, int> completed_jobs() const;
  // Every process's log, for failure messages.
  std::string logs() const;
  // The pids of the scheduler, the servers and the client daemon (for tests of the harness).
  std::vector<pid_t> pids() const;
  // The temp dir holding sockets, environments and logs; removed by the destructor.
  const std::filesystem::path& directory() const { return dir_.path(); }

 private:
  struct Daemon {
    std::string node;  // its name in the cluster (-N), as the scheduler's log names it
    int host = 0;
    std::unique_ptr<BackgroundProcess> process{};
  };

  bool start();
  void start_daemon(Daemon& daemon, const std::vector<std::string>& extra);
  bool wait_for_logins();
  std::string address_of(const std::string& node) const;
  static void stop(BackgroundProcess& process);

  const NamespaceNetwork& net_;
  IcecreamClusterOptions options_;
  TempDirectory dir_;
  std::string netname_;
  std::unique_ptr<BackgroundProcess> scheduler_;
  std::vector<Daemon> servers_;
  Daemon client_;
  std::string why_;
  bool tried_ = false;
};

}  // namespace kiln::testing
