#include "testing/icecream_cluster.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <sstream>
#include <thread>

#include "kiln/paths.h"
#include "kiln/process.h"
#include "testing/test_support.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The port an iceccd takes compile jobs on (its default, -p).
constexpr int kDaemonPort = 10245;

}  // namespace

IcecreamCluster::IcecreamCluster(const NamespaceNetwork& net, IcecreamClusterOptions options)
    : net_(net), options_(options) {
  if (!net_.available()) {
    why_ = net_.why();
    return;
  }
  if (options_.servers < 1 || net_.hosts() < options_.servers + 2) {
    why_ = "an icecream cluster of " + std::to_string(options_.servers) + " server(s) needs " +
           std::to_string(options_.servers + 2) + " hosts, the network has " +
           std::to_string(net_.hosts());
    return;
  }
  for (const char* tool : {"icecc", "iceccd", "icecc-scheduler"}) {
    if (!which(tool)) {
      why_ = std::string(tool) + " is not installed (scripts/install-deps.sh installs icecc)";
      return;
    }
  }
  tried_ = true;
  if (start()) wait_for_logins();
}

IcecreamCluster::~IcecreamCluster() {
  if (client_.process) stop(*client_.process);
  for (Daemon& server : servers_) stop(*server.process);
  if (scheduler_) stop(*scheduler_);
}

void IcecreamCluster::stop(BackgroundProcess& process) {
  // A compile an iceccd runs is not always in its process group: end its descendants first.
  if (process.running()) kill_child_processes(process.pid());
  process.stop();
}

bool IcecreamCluster::start() {
  // The daemons drop to the `icecc` user, which must create its sockets and directories here.
  if (::chmod(dir_.path().c_str(), 01777) != 0) {
    why_ = "cannot make " + dir_.path().string() + " world-writable";
    return false;
  }
  // A network name of the cluster's own: no other icecream scheduler is taken for it.
  netname_ = "kiln" + std::to_string(::getpid()) + fs::path(dir_.path()).filename().string();
  std::vector<std::string> argv = net_.exec_prefix(0);
  argv.insert(argv.end(), {"icecc-scheduler", "-n", netname_, "-vvv"});
  scheduler_ = std::make_unique<BackgroundProcess>(argv, Environment{}, dir_ / "scheduler.log");
  for (int i = 0; i < options_.servers; ++i) {
    servers_.push_back({.node = "server" + std::to_string(i), .host = 1 + i});
    start_daemon(servers_.back(), {"-m", std::to_string(options_.slots)});
  }
  // The client's daemon takes no job, its own client's included: -m 0 makes the scheduler never
  // pick it, --no-remote keeps other hosts from sending it any.
  client_ = {.node = "client", .host = options_.servers + 1};
  start_daemon(client_, {"-m", "0", "--no-remote"});
  return true;
}

void IcecreamCluster::start_daemon(Daemon& daemon, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = net_.exec_prefix(daemon.host);
  // -b must not exist yet: iceccd creates it and hands it to its user.
  argv.insert(argv.end(), {"iceccd", "-n", netname_, "-s", net_.address(0), "-N", daemon.node, "-b",
                           (dir_ / (daemon.node + "-envs")).string(), "-vvv"});
  argv.insert(argv.end(), extra.begin(), extra.end());
  Environment env{{"ICECC_TEST_SOCKET", (dir_ / (daemon.node + ".sock")).string()}};
  daemon.process = std::make_unique<BackgroundProcess>(argv, env, dir_ / (daemon.node + ".log"));
}

bool IcecreamCluster::wait_for_logins() {
  // iceccd looks for its scheduler every few seconds; each logs in once it finds it.
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string log = scheduler_->log();
    bool all = log.find("login " + client_.node + " ") != std::string::npos;
    for (const Daemon& server : servers_) {
      all = all && log.find("login " + server.node + " ") != std::string::npos;
    }
    if (all) return true;
    bool running = scheduler_->running() && client_.process->running();
    for (Daemon& server : servers_) running = running && server.process->running();
    if (!running) break;
    std::this_thread::sleep_for(100ms);
  }
  why_ =
      "the icecream cluster did not come up within 30 s (not every daemon logged in to the "
      "scheduler)\n" +
      logs();
  return false;
}

IcecreamCluster::Environment IcecreamCluster::client_env() const {
  return {{"ICECC_TEST_SOCKET", (dir_ / (client_.node + ".sock")).string()}};
}

std::vector<std::string> IcecreamCluster::client_prefix() const {
  return net_.exec_prefix(client_.host);
}

std::string IcecreamCluster::server_address(int server) const {
  return net_.address(servers_.at(server).host) + ":" + std::to_string(kDaemonPort);
}

void IcecreamCluster::kill_server(int server) {
  BackgroundProcess& process = *servers_.at(server).process;
  if (process.running()) kill_child_processes(process.pid());
  process.kill();
}

std::string IcecreamCluster::address_of(const std::string& node) const {
  for (size_t i = 0; i < servers_.size(); ++i) {
    if (servers_[i].node == node) return server_address(static_cast<int>(i));
  }
  if (node == client_.node) return net_.address(client_.host);
  return node;
}

std::map<std::string, int> IcecreamCluster::completed_jobs() const {
  // "END 7 status=0 in=... out=... real=... server=server1"
  static const std::regex kEnd(R"(END \d+ status=0 .* server=(\S+))");
  std::map<std::string, int> completed;
  std::istringstream lines(scheduler_ ? scheduler_->log() : std::string());
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_search(line, match, kEnd)) ++completed[address_of(match[1].str())];
  }
  return completed;
}

std::string IcecreamCluster::logs() const {
  std::string text;
  auto add = [&](const std::string& name, const std::unique_ptr<BackgroundProcess>& process) {
    if (!process) return;
    text += "--- " + name + " (pid " + std::to_string(process->pid()) + ")\n" + process->log();
  };
  add("icecc-scheduler", scheduler_);
  for (const Daemon& server : servers_) add("iceccd " + server.node, server.process);
  add("iceccd " + client_.node, client_.process);
  return text;
}

std::vector<pid_t> IcecreamCluster::pids() const {
  std::vector<pid_t> out;
  if (scheduler_) out.push_back(scheduler_->pid());
  for (const Daemon& server : servers_) out.push_back(server.process->pid());
  if (client_.process) out.push_back(client_.process->pid());
  return out;
}

}  // namespace kiln::testing
