#include "testing/sccache_cluster.h"

#include <sys/mount.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/text.h"
#include "testing/test_support.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kSchedulerPort = 10600;
constexpr int kServerPort = 10501;

std::string default_bin_dir() {
#ifdef KILN_SCCACHE_BIN_DIR
  return KILN_SCCACHE_BIN_DIR;
#else
  return {};
#endif
}

// A TOML basic string (the values here are paths, addresses and base64 tokens).
std::string quoted(const std::string& value) { return "\"" + value + "\""; }

}  // namespace

SccacheCluster::SccacheCluster(const NamespaceNetwork& net, SccacheClusterOptions options)
    : ClusterBase(net, {.servers = options.servers, .kind = "an sccache-dist"}),
      options_(std::move(options)) {
  if (options_.bin_dir.empty()) options_.bin_dir = default_bin_dir();
  if (!available() || !find_tools()) return;
  mark_tried();
  if (!write_configs()) return;
  start();
  wait_for_servers();
}

SccacheCluster::~SccacheCluster() {
  stop_all();
  unmount_leftovers();
}

bool SccacheCluster::find_tools() {
  for (const char* tool : {"sccache", "sccache-dist"}) {
    if (!fs::exists(fs::path(options_.bin_dir) / tool)) {
      fail(std::string(tool) + " is not in " + options_.bin_dir + " (scripts/install-deps.sh)");
      return false;
    }
  }
  if (!which("bwrap")) {
    fail(
        "bubblewrap (bwrap), which sccache-dist's build server sandboxes jobs with, is not "
        "installed (scripts/install-deps.sh)");
    return false;
  }
  return true;
}

std::optional<std::string> SccacheCluster::dist_tool(const std::vector<std::string>& args) {
  std::vector<std::string> argv{(fs::path(options_.bin_dir) / "sccache-dist").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult result = run({.argv = argv, .merge_stderr = false, .timeout = 30s});
  if (result.ok()) return std::string(trimmed(result.output));
  fail("`" + result.command_line + "` failed (" + result.status_text() + "): " + result.output +
       result.error_output);
  return std::nullopt;
}

bool SccacheCluster::write_configs() {
  std::optional<std::string> key = dist_tool({"auth", "generate-jwt-hs256-key"});
  std::optional<std::string> token = dist_tool({"auth", "generate-shared-token"});
  if (!key || !token) return false;
  client_token_ = *token;
  std::ofstream(directory() / "scheduler.conf")
      << "public_addr = " << quoted(net().address(0) + ":" + std::to_string(kSchedulerPort))
      << "\n[client_auth]\ntype = \"token\"\ntoken = " << quoted(*token)
      << "\n[server_auth]\ntype = \"jwt_hs256\"\nsecret_key = " << quoted(*key) << "\n";
  for (int i = 0; i < options_.servers; ++i) {
    std::optional<std::string> server_token =
        dist_tool({"auth", "generate-jwt-hs256-server-token", "--server", server_address(i),
                   "--config", (directory() / "scheduler.conf").string()});
    if (!server_token) return false;
    fs::path home = directory() / ("server" + std::to_string(i));
    fs::create_directories(home / "cache");
    fs::create_directories(home / "build");
    std::ofstream(home / "server.conf")
        << "cache_dir = " << quoted((home / "cache").string())
        << "\npublic_addr = " << quoted(server_address(i))
        << "\nscheduler_url = " << quoted(scheduler_url())
        << "\n[builder]\ntype = \"overlay\"\nbuild_dir = " << quoted((home / "build").string())
        << "\nbwrap_path = " << quoted(which("bwrap")->string())
        << "\n[scheduler_auth]\ntype = \"jwt_token\"\ntoken = " << quoted(*server_token) << "\n";
  }
  fs::create_directories(directory() / "client");
  std::ofstream(directory() / "client" / "client.conf")
      << "[dist]\nscheduler_url = " << quoted(scheduler_url()) << "\ntoolchains = []\ncache_dir = "
      << quoted((directory() / "client" / "toolchains").string())
      << "\n[dist.auth]\ntype = \"token\"\ntoken = " << quoted(client_token_)
      << "\n[cache.disk]\ndir = " << quoted((directory() / "client" / "cache").string()) << "\n";
  return true;
}

void SccacheCluster::start() {
  std::string dist = (fs::path(options_.bin_dir) / "sccache-dist").string();
  Environment env{{"SCCACHE_NO_DAEMON", "1"}, {"SCCACHE_LOG", "info"}};
  BackgroundProcess& scheduler = start_scheduler(
      {dist, "scheduler", "--config", (directory() / "scheduler.conf").string()}, env);
  // A client that finds no scheduler when it starts reports "not connected" until it is next
  // asked to compile, so the clients start once the scheduler listens.
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (scheduler.running() &&
         scheduler.log().find("Scheduler listening for clients") == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(20ms);
  }
  for (int i = 0; i < options_.servers; ++i) {
    fs::path conf = directory() / ("server" + std::to_string(i)) / "server.conf";
    start_server({dist, "server", "--config", conf.string()}, env);
  }
  // The client server the status is asked through: sccache's own foreground server mode
  // (`sccache --start-server` would leave a daemon whose pid is not ours).
  Environment probe = probe_env();
  probe.insert({{"SCCACHE_START_SERVER", "1"}, {"SCCACHE_NO_DAEMON", "1"}});
  probe["SCCACHE_IDLE_TIMEOUT"] = "0";
  start_client({(fs::path(options_.bin_dir) / "sccache").string()}, probe, "probe");
}

bool SccacheCluster::wait_for_servers() {
  std::vector<std::string> status = client_prefix();
  status.insert(status.end(), {(fs::path(options_.bin_dir) / "sccache").string(), "--dist-status"});
  auto deadline = std::chrono::steady_clock::now() + 30s;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
    // Only once the probe listens: a client command finding no server would start a daemon.
    if (!client()->running() || !scheduler()->running()) break;
    if (!fs::exists(directory() / "probe.sock")) continue;
    RunResult result = run({.argv = status, .env = probe_env(), .timeout = 10s});
    last = result.output;
    nlohmann::json doc = nlohmann::json::parse(result.output, nullptr, false);
    if (doc.is_discarded() || !doc.contains("SchedulerStatus")) continue;
    if (doc["SchedulerStatus"][1].value("num_servers", 0) == options_.servers) return true;
  }
  fail("the sccache-dist cluster did not come up within 30 s (last status: " + last + ")\n" +
       logs());
  return false;
}

SccacheCluster::Environment SccacheCluster::client_env() const {
  const char* path = std::getenv("PATH");
  return {{"SCCACHE_CONF", (directory() / "client" / "client.conf").string()},
          {"SCCACHE_DIR", (directory() / "client" / "cache").string()},
          {"PATH", options_.bin_dir + ":" + (path != nullptr ? path : "/usr/bin:/bin")}};
}

SccacheCluster::Environment SccacheCluster::probe_env() const {
  Environment env = client_env();
  env["SCCACHE_SERVER_UDS"] = (directory() / "probe.sock").string();
  // Should the probe be gone, a server a client command starts in its place ends on its own.
  env["SCCACHE_IDLE_TIMEOUT"] = "60";
  return env;
}

std::string SccacheCluster::scheduler_url() const {
  return "http://" + net().address(0) + ":" + std::to_string(kSchedulerPort);
}

std::string SccacheCluster::server_address(int server) const {
  return net().address(server_host(server)) + ":" + std::to_string(kServerPort);
}

std::map<std::string, int> SccacheCluster::completed_jobs() const {
  static const std::regex kAssigned(
      R"(Job (\d+) created and will be assigned to server ServerId\(([^)]+)\))");
  static const std::regex kComplete(R"(Job (\d+) updated state to Complete)");
  std::map<std::string, std::string> server_of_job;
  std::map<std::string, int> completed;
  std::istringstream lines(scheduler_log());
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_search(line, match, kAssigned)) {
      server_of_job[match[1].str()] = match[2].str();
    } else if (std::regex_search(line, match, kComplete)) {
      ++completed[server_of_job[match[1].str()]];
    }
  }
  return completed;
}

void SccacheCluster::unmount_leftovers() const {
  // The overlay builder mounts in namespaces of its own, which die with it; a mount that still
  // shows here under the cluster's directory would keep the directory from being removed.
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::vector<std::string> ours;
  for (std::string line; std::getline(mountinfo, line);) {
    std::istringstream fields(line);
    std::string id, parent, device, root, mount_point;
    fields >> id >> parent >> device >> root >> mount_point;
    if (mount_point.starts_with(directory().string())) ours.push_back(mount_point);
  }
  for (auto it = ours.rbegin(); it != ours.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
}

}  // namespace kiln::testing
