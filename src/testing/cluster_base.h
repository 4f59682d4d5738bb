// What the test clusters of distributed-build engines (SccacheCluster, IcecreamCluster) share:
// their layout on a NamespaceNetwork (the scheduler on host 0, server i on host 1+i, the client
// host after them), the processes they start there (each through `ip netns exec` as a direct
// child whose pid the cluster holds, its output in a log in the cluster's temp dir), and why a
// cluster is not available. The destructor stops every process by pid, the last started first,
// and removes the temp dir, even when the test failed. An engine's own knowledge (its programs,
// configs, tokens, how to tell it is up, how its scheduler counts jobs) stays in its subclass.
//
//   class MyCluster : public ClusterBase {
//    public:
//     MyCluster(const NamespaceNetwork& net) : ClusterBase(net, {.servers = 1, .kind = "my"}) {
//       if (!available()) return;        // no network, or too few hosts for the servers
//       mark_tried();                    // the tools are there: failing from here on is a failure
//       start_scheduler({"my-scheduler"}, {});
//       start_server({"my-server", "--scheduler", net.address(0)}, {});
//       start_client({"my-client-daemon"}, {}, "client");
//     }
//   };
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/temp_directory.h"
#include "testing/background_process.h"
#include "testing/namespace_network.h"

namespace kiln::testing {

class ClusterBase {
 public:
  using Environment = BackgroundProcess::Environment;

  virtual ~ClusterBase();
  ClusterBase(const ClusterBase&) = delete;
  ClusterBase& operator=(const ClusterBase&) = delete;

  bool available() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  // True when the cluster could not even be tried (no root, netns or the engine's tools): a test
  // skips then, and fails when the cluster was tried and did not come up.
  bool missing_prerequisite() const { return !available() && !tried_; }

  // `ip netns exec <client host>`.
  std::vector<std::string> client_prefix() const;
  // The servers started so far.
  int servers() const { return static_cast<int>(servers_.size()); }
  // SIGKILLs server i (and whatever it runs), as a machine that dies.
  void kill_server(int server);
  // Every process's log, headed by its log file's name and pid, for failure messages.
  std::string logs() const;
  // The pids of the scheduler, the servers and the client host's process, in the order they
  // were started (for tests of the harness).
  std::vector<pid_t> pids() const;
  // Jobs the scheduler saw completed, per server's address, from the scheduler's own log: where
  // compiles ran, independent of any client's account.
  virtual std::map<std::string, int> completed_jobs() const = 0;
  // completed_jobs() once they add up to at least `total`, or when `limit` has passed: a
  // scheduler logs a job's end when the server reports it, which may come after the client has
  // its object.
  std::map<std::string, int> completed_jobs(
      int total, std::chrono::seconds limit = std::chrono::seconds(30)) const;
  // The temp dir holding configs, sockets and logs; removed by the destructor.
  const std::filesystem::path& directory() const { return dir_.path(); }

 protected:
  struct Layout {
    // Servers, 1..n; the network needs servers + 2 hosts.
    int servers = 1;
    // What the cluster is, for why(): "an icecream" says "an icecream cluster of 2 server(s)".
    std::string_view kind;
    // Whether stopping (or killing) a process ends its descendants first, for an engine whose
    // servers run compiles outside their process group.
    bool end_descendants = false;
  };

  // Checks the network: available() is false and why() says why when it is down or has too few
  // hosts for `layout.servers`.
  ClusterBase(const NamespaceNetwork& net, Layout layout);

  // Marks the cluster as tried: its prerequisites are there, so not coming up is a failure.
  void mark_tried() { tried_ = true; }
  // Records why the cluster is not available.
  void fail(std::string why);

  // Start the scheduler on host 0 (log scheduler.log), the next server i on host 1+i (log
  // server<i>.log) and the client host's process (log <name>.log), each with this process's
  // environment changed by `env`. The process lives until the cluster stops it.
  BackgroundProcess& start_scheduler(const std::vector<std::string>& argv, const Environment& env);
  BackgroundProcess& start_server(const std::vector<std::string>& argv, const Environment& env);
  BackgroundProcess& start_client(const std::vector<std::string>& argv, const Environment& env,
                                  const std::string& name);

  // Stops every process, the last started first; a second call does nothing. A subclass whose
  // destructor must clean up after its processes calls it first.
  void stop_all() noexcept;

  // The processes started (null before they are).
  BackgroundProcess* scheduler() const { return scheduler_; }
  BackgroundProcess& server(int server) const { return *servers_.at(server); }
  BackgroundProcess* client() const { return client_; }
  // What the scheduler wrote so far ("" before it started).
  std::string scheduler_log() const { return scheduler_ != nullptr ? scheduler_->log() : ""; }
  // True while the scheduler, every server and the client host's process run.
  bool all_running() const;

  int server_host(int server) const { return 1 + server; }
  int client_host() const { return layout_.servers + 1; }
  const NamespaceNetwork& net() const { return net_; }

 private:
  BackgroundProcess& start_on(int host, const std::vector<std::string>& argv,
                              const Environment& env, const std::string& log);
  void end(BackgroundProcess& process, bool kill) noexcept;

  const NamespaceNetwork& net_;
  Layout layout_;
  TempDirectory dir_;
  std::vector<std::unique_ptr<BackgroundProcess>> started_;  // in start order
  BackgroundProcess* scheduler_ = nullptr;
  std::vector<BackgroundProcess*> servers_;
  BackgroundProcess* client_ = nullptr;
  std::string why_;
  bool tried_ = false;
};

}  // namespace kiln::testing
