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

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// A TOML basic string (the values here are paths, addresses and base64 tokens).
std::string quoted(const std::string& value) { return "\"" + value + "\""; }

}  // namespace

SccacheCluster::SccacheCluster(const NamespaceNetwork& net, SccacheClusterOptions options)
    : net_(net), options_(std::move(options)) {
  if (options_.bin_dir.empty()) options_.bin_dir = default_bin_dir();
  if (!net_.available()) {
    why_ = net_.why();
    return;
  }
  if (options_.servers < 1 || net_.hosts() < options_.servers + 2) {
    why_ = "a cluster of " + std::to_string(options_.servers) + " build server(s) needs " +
           std::to_string(options_.servers + 2) + " hosts, the network has " +
           std::to_string(net_.hosts());
    return;
  }
  if (!find_tools()) return;
  tried_ = true;
  if (write_configs() && start()) wait_for_servers();
}

SccacheCluster::~SccacheCluster() {
  if (probe_) probe_->stop();
  for (auto& server : servers_) server->stop();
  if (scheduler_) scheduler_->stop();
  unmount_leftovers();
}

bool SccacheCluster::find_tools() {
  for (const char* tool : {"sccache", "sccache-dist"}) {
    if (!fs::exists(fs::path(options_.bin_dir) / tool)) {
      why_ = std::string(tool) + " is not in " + options_.bin_dir + " (scripts/install-deps.sh)";
      return false;
    }
  }
  if (!which("bwrap")) {
    why_ =
        "bubblewrap (bwrap), which sccache-dist's build server sandboxes jobs with, is not "
        "installed (scripts/install-deps.sh)";
    return false;
  }
  return true;
}

std::optional<std::string> SccacheCluster::dist_tool(const std::vector<std::string>& args) {
  std::vector<std::string> argv{(fs::path(options_.bin_dir) / "sccache-dist").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult result = run({.argv = argv, .merge_stderr = false, .timeout = 30s});
  if (result.ok()) return trimmed(result.output);
  why_ = "`" + result.command_line + "` failed (" + result.status_text() + "): " + result.output +
         result.error_output;
  return std::nullopt;
}

bool SccacheCluster::write_configs() {
  std::optional<std::string> key = dist_tool({"auth", "generate-jwt-hs256-key"});
  std::optional<std::string> token = dist_tool({"auth", "generate-shared-token"});
  if (!key || !token) return false;
  client_token_ = *token;
  std::ofstream(dir_ / "scheduler.conf")
      << "public_addr = " << quoted(net_.address(0) + ":" + std::to_string(kSchedulerPort))
      << "\n[client_auth]\ntype = \"token\"\ntoken = " << quoted(*token)
      << "\n[server_auth]\ntype = \"jwt_hs256\"\nsecret_key = " << quoted(*key) << "\n";
  for (int i = 0; i < options_.servers; ++i) {
    std::optional<std::string> server_token =
        dist_tool({"auth", "generate-jwt-hs256-server-token", "--server", server_address(i),
                   "--config", (dir_ / "scheduler.conf").string()});
    if (!server_token) return false;
    fs::path home = dir_ / ("server" + std::to_string(i));
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
  fs::create_directories(dir_ / "client");
  std::ofstream(dir_ / "client" / "client.conf")
      << "[dist]\nscheduler_url = " << quoted(scheduler_url())
      << "\ntoolchains = []\ncache_dir = " << quoted((dir_ / "client" / "toolchains").string())
      << "\n[dist.auth]\ntype = \"token\"\ntoken = " << quoted(client_token_)
      << "\n[cache.disk]\ndir = " << quoted((dir_ / "client" / "cache").string()) << "\n";
  return true;
}

std::unique_ptr<BackgroundProcess> SccacheCluster::start_on(int host,
                                                            const std::vector<std::string>& argv,
                                                            const Environment& env,
                                                            const std::string& log) {
  std::vector<std::string> full = net_.exec_prefix(host);
  full.insert(full.end(), argv.begin(), argv.end());
  return std::make_unique<BackgroundProcess>(full, env, dir_ / log);
}

bool SccacheCluster::start() {
  std::string dist = (fs::path(options_.bin_dir) / "sccache-dist").string();
  Environment env{{"SCCACHE_NO_DAEMON", "1"}, {"SCCACHE_LOG", "info"}};
  scheduler_ = start_on(0, {dist, "scheduler", "--config", (dir_ / "scheduler.conf").string()}, env,
                        "scheduler.log");
  for (int i = 0; i < options_.servers; ++i) {
    fs::path conf = dir_ / ("server" + std::to_string(i)) / "server.conf";
    servers_.push_back(start_on(1 + i, {dist, "server", "--config", conf.string()}, env,
                                "server" + std::to_string(i) + ".log"));
  }
  // The client server the status is asked through: sccache's own foreground server mode
  // (`sccache --start-server` would leave a daemon whose pid is not ours).
  Environment probe = probe_env();
  probe.insert({{"SCCACHE_START_SERVER", "1"}, {"SCCACHE_NO_DAEMON", "1"}});
  probe["SCCACHE_IDLE_TIMEOUT"] = "0";
  probe_ = start_on(options_.servers + 1, {(fs::path(options_.bin_dir) / "sccache").string()},
                    probe, "probe.log");
  return true;
}

bool SccacheCluster::wait_for_servers() {
  std::vector<std::string> status = client_prefix();
  status.insert(status.end(), {(fs::path(options_.bin_dir) / "sccache").string(), "--dist-status"});
  auto deadline = std::chrono::steady_clock::now() + 30s;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
    // Only once the probe listens: a client command finding no server would start a daemon.
    if (!probe_->running() || !scheduler_->running()) break;
    if (!fs::exists(dir_ / "probe.sock")) continue;
    RunResult result = run({.argv = status, .env = probe_env(), .timeout = 10s});
    last = result.output;
    nlohmann::json doc = nlohmann::json::parse(result.output, nullptr, false);
    if (doc.is_discarded() || !doc.contains("SchedulerStatus")) continue;
    if (doc["SchedulerStatus"][1].value("num_servers", 0) == options_.servers) return true;
  }
  why_ =
      "the sccache-dist cluster did not come up within 30 s (last status: " + last + ")\n" + logs();
  return false;
}

SccacheCluster::Environment SccacheCluster::client_env() const {
  const char* path = std::getenv("PATH");
  return {{"SCCACHE_CONF", (dir_ / "client" / "client.conf").string()},
          {"SCCACHE_DIR", (dir_ / "client" / "cache").string()},
          {"PATH", options_.bin_dir + ":" + (path != nullptr ? path : "/usr/bin:/bin")}};
}

SccacheCluster::Environment SccacheCluster::probe_env() const {
  Environment env = client_env();
  env["SCCACHE_SERVER_UDS"] = (dir_ / "probe.sock").string();
  // Should the probe be gone, a server a client command starts in its place ends on its own.
  env["SCCACHE_IDLE_TIMEOUT"] = "60";
  return env;
}

std::vector<std::string> SccacheCluster::client_prefix() const {
  return net_.exec_prefix(options_.servers + 1);
}

std::string SccacheCluster::scheduler_url() const {
  return "http://" + net_.address(0) + ":" + std::to_string(kSchedulerPort);
}

std::string SccacheCluster::server_address(int server) const {
  return net_.address(1 + server) + ":" + std::to_string(kServerPort);
}

void SccacheCluster::kill_server(int server) { servers_.at(server)->kill(); }

std::map<std::string, int> SccacheCluster::completed_jobs() const {
  static const std::regex kAssigned(
      R"(Job (\d+) created and will be assigned to server ServerId\(([^)]+)\))");
  static const std::regex kComplete(R"(Job (\d+) updated state to Complete)");
  std::map<std::string, std::string> server_of_job;
  std::map<std::string, int> completed;
  std::istringstream lines(scheduler_ ? scheduler_->log() : std::string());
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

std::string SccacheCluster::logs() const {
  std::string text;
  auto add = [&](const std::string& name, const std::unique_ptr<BackgroundProcess>& process) {
    if (process)
      text +=
          "--- " + name + " (pid " + std::to_string(process->pid()) + ")\n" + process->log() + "\n";
  };
  add("scheduler", scheduler_);
  for (size_t i = 0; i < servers_.size(); ++i)
    add("build server " + std::to_string(i), servers_[i]);
  add("client probe", probe_);
  return text;
}

std::vector<pid_t> SccacheCluster::pids() const {
  std::vector<pid_t> out;
  if (scheduler_) out.push_back(scheduler_->pid());
  for (const auto& server : servers_) out.push_back(server->pid());
  if (probe_) out.push_back(probe_->pid());
  return out;
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
    if (mount_point.starts_with(dir_.path().string())) ours.push_back(mount_point);
  }
  for (auto it = ours.rbegin(); it != ours.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
}

}  // namespace kiln::testing
