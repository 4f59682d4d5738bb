#include "testing/namespace_network.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <regex>

#include "kiln/paths.h"
#include "kiln/process.h"

namespace kiln::testing {
namespace {

using namespace std::chrono_literals;

// Networks made by this process so far: each gets names and a subnet of its own.
std::atomic<int> networks_made{0};

bool pid_running(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

void remove_stale_namespaces() {
  static const std::regex kOurs(R"(kiln(\d+)n\d+(h\d+|hub))");
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/run/netns", ec)) {
    std::smatch match;
    std::string name = entry.path().filename().string();
    if (!std::regex_match(name, match, kOurs)) continue;
    if (pid_running(static_cast<pid_t>(std::stol(match[1].str())))) continue;
    run({.argv = {"ip", "netns", "del", name}, .timeout = 10s});
  }
}

NamespaceNetwork::NamespaceNetwork(int hosts) {
  if (::geteuid() != 0) {
    why_ =
        "network namespaces need root (this test runs as uid " + std::to_string(::geteuid()) + ")";
    return;
  }
  if (!which("ip")) {
    why_ = "`ip` (iproute2) is not installed (scripts/install-deps.sh)";
    return;
  }
  if (hosts < 1 || hosts > 250) {
    why_ = "a NamespaceNetwork holds 1..250 hosts, not " + std::to_string(hosts);
    return;
  }
  remove_stale_namespaces();
  int pid = static_cast<int>(::getpid());
  int serial = networks_made.fetch_add(1);
  prefix_ = "kiln" + std::to_string(pid) + "n" + std::to_string(serial);
  subnet_ = "10." + std::to_string(100 + pid % 100) + "." +
            std::to_string((pid / 100 + serial) % 256) + ".";
  if (!create(hosts)) remove_all();
}

NamespaceNetwork::~NamespaceNetwork() { remove_all(); }

bool NamespaceNetwork::create(int hosts) {
  hub_ = prefix_ + "hub";
  if (!ip({"netns", "add", hub_})) return false;
  created_.push_back(hub_);
  if (!ip({"-n", hub_, "link", "add", "br0", "type", "bridge"}) ||
      !ip({"-n", hub_, "link", "set", "br0", "up"})) {
    return false;
  }
  for (int i = 0; i < hosts; ++i) {
    std::string host = prefix_ + "h" + std::to_string(i);
    std::string port = "v" + std::to_string(i);
    if (!ip({"netns", "add", host})) return false;
    created_.push_back(host);
    names_.push_back(host);
    // The veth is made inside the hub, its peer moved straight into the host: neither end ever
    // appears in the root namespace.
    if (!ip({"-n", hub_, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns",
             host}) ||
        !ip({"-n", hub_, "link", "set", port, "master", "br0", "up"}) ||
        !ip({"-n", host, "addr", "add", address(i) + "/24", "dev", "eth0"}) ||
        !ip({"-n", host, "link", "set", "eth0", "up"}) ||
        !ip({"-n", host, "link", "set", "lo", "up"})) {
      return false;
    }
  }
  return true;
}

bool NamespaceNetwork::ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult result = run({.argv = argv, .timeout = 10s});
  if (result.ok()) return true;
  why_ = "`" + result.command_line + "` failed (" + result.status_text() + "): " + result.output;
  return false;
}

void NamespaceNetwork::remove_all() {
  // Hosts first: deleting a host's namespace destroys its eth0 and with it the veth's hub end.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    run({.argv = {"ip", "netns", "del", *it}, .timeout = 10s});
  }
  created_.clear();
}

std::string NamespaceNetwork::address(int host) const { return subnet_ + std::to_string(host + 1); }

std::vector<std::string> NamespaceNetwork::exec_prefix(int host) const {
  return {"ip", "netns", "exec", name(host)};
}

}  // namespace kiln::testing
