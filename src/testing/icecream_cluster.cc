#include "testing/icecream_cluster.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "kiln/paths.h"
#include "kiln/process.h"
#include "testing/test_support.h"

namespace kiln::testing {
namespace {

using namespace std::chrono_literals;

// The port an iceccd takes compile jobs on (its default, -p).
constexpr int kDaemonPort = 10245;

}  // namespace

IcecreamCluster::IcecreamCluster(const NamespaceNetwork& net, IcecreamClusterOptions options)
    : ClusterBase(net,
                  {.servers = options.servers, .kind = "an icecream", .end_descendants = true}),
      options_(options) {
  if (!available()) return;
  for (const char* tool : {"icecc", "iceccd", "icecc-scheduler"}) {
    if (!which(tool)) {
      fail(std::string(tool) + " is not installed (scripts/install-deps.sh installs icecc)");
      return;
    }
  }
  mark_tried();
  if (start()) wait_for_logins();
}

bool IcecreamCluster::start() {
  // The daemons drop to the `icecc` user, which must create its sockets and directories here.
  if (::chmod(directory().c_str(), 01777) != 0) {
    fail("cannot make " + directory().string() + " world-writable");
    return false;
  }
  // A network name of the cluster's own: no other icecream scheduler is taken for it.
  netname_ = "kiln" + std::to_string(::getpid()) + directory().filename().string();
  // Each server is a machine of its own, idle but for the cluster's compiles: its iceccd must not
  // see the load of the one real machine (tests/helpers/idle_host.cc).
  std::ofstream(directory() / "idle-stat") << read_file("/proc/stat");
  start_scheduler({"icecc-scheduler", "-n", netname_, "-vvv"}, {});
  for (int i = 0; i < options_.servers; ++i) {
    start_daemon("server" + std::to_string(i), {"-m", std::to_string(options_.slots)}, false);
  }
  // The client's daemon takes no job, its own client's included: -m 0 makes the scheduler never
  // pick it, --no-remote keeps other hosts from sending it any.
  start_daemon("client", {"-m", "0", "--no-remote"}, true);
  return true;
}

void IcecreamCluster::start_daemon(const std::string& node, const std::vector<std::string>& extra,
                                   bool client) {
  // -b must not exist yet: iceccd creates it and hands it to its user.
  std::vector<std::string> argv;
  if (!client) argv = {KILN_TEST_IDLE_HOST, (directory() / "idle-stat").string()};
  argv.insert(argv.end(), {"iceccd", "-n", netname_, "-s", net().address(0), "-N", node, "-b",
                           (directory() / (node + "-envs")).string(), "-vvv"});
  argv.insert(argv.end(), extra.begin(), extra.end());
  Environment env{{"ICECC_TEST_SOCKET", (directory() / (node + ".sock")).string()}};
  if (client) {
    start_client(argv, env, node);
  } else {
    start_server(argv, env);
  }
}

bool IcecreamCluster::wait_for_logins() {
  // iceccd looks for its scheduler every few seconds; each logs in once it finds it.
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string log = scheduler_log();
    bool all = log.find("login client ") != std::string::npos;
    for (int i = 0; i < servers(); ++i) {
      all = all && log.find("login server" + std::to_string(i) + " ") != std::string::npos;
    }
    if (all) return true;
    if (!all_running()) break;
    std::this_thread::sleep_for(100ms);
  }
  fail(
      "the icecream cluster did not come up within 30 s (not every daemon logged in to the "
      "scheduler)\n" +
      logs());
  return false;
}

IcecreamCluster::Environment IcecreamCluster::client_env() const {
  return {{"ICECC_TEST_SOCKET", (directory() / "client.sock").string()}};
}

std::string IcecreamCluster::server_address(int server) const {
  return net().address(server_host(server)) + ":" + std::to_string(kDaemonPort);
}

std::string IcecreamCluster::address_of(const std::string& node) const {
  for (int i = 0; i < servers(); ++i) {
    if (node == "server" + std::to_string(i)) return server_address(i);
  }
  if (node == "client") return net().address(client_host());
  return node;
}

std::map<std::string, int> IcecreamCluster::completed_jobs() const {
  // "END 7 status=0 in=... out=... real=... server=server1"
  static const std::regex kEnd(R"(END \d+ status=0 .* server=(\S+))");
  std::map<std::string, int> completed;
  std::istringstream lines(scheduler_log());
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_search(line, match, kEnd)) ++completed[address_of(match[1].str())];
  }
  return completed;
}

}  // namespace kiln::testing
