#include "testing/cluster_base.h"

#include <thread>

#include "kiln/process.h"

namespace kiln::testing {

ClusterBase::ClusterBase(const NamespaceNetwork& net, Layout layout) : net_(net), layout_(layout) {
  if (!net_.available()) {
    why_ = net_.why();
  } else if (layout_.servers < 1 || net_.hosts() < layout_.servers + 2) {
    why_ = std::string(layout_.kind) + " cluster of " + std::to_string(layout_.servers) +
           " server(s) needs " + std::to_string(layout_.servers + 2) + " hosts, the network has " +
           std::to_string(net_.hosts());
  }
}

ClusterBase::~ClusterBase() { stop_all(); }

void ClusterBase::fail(std::string why) { why_ = std::move(why); }

void ClusterBase::end(BackgroundProcess& process, bool kill) noexcept {
  // A compile a server runs is not always in its process group: end its descendants first.
  if (layout_.end_descendants && process.running()) kill_child_processes(process.pid());
  if (kill) {
    process.kill();
  } else {
    process.stop();
  }
}

void ClusterBase::stop_all() noexcept {
  for (auto it = started_.rbegin(); it != started_.rend(); ++it) end(**it, false);
}

void ClusterBase::kill_server(int server) { end(*servers_.at(server), true); }

BackgroundProcess& ClusterBase::start_on(int host, const std::vector<std::string>& argv,
                                         const Environment& env, const std::string& log) {
  std::vector<std::string> full = net_.exec_prefix(host);
  full.insert(full.end(), argv.begin(), argv.end());
  started_.push_back(std::make_unique<BackgroundProcess>(full, env, dir_ / log));
  return *started_.back();
}

BackgroundProcess& ClusterBase::start_scheduler(const std::vector<std::string>& argv,
                                                const Environment& env) {
  scheduler_ = &start_on(0, argv, env, "scheduler.log");
  return *scheduler_;
}

BackgroundProcess& ClusterBase::start_server(const std::vector<std::string>& argv,
                                             const Environment& env) {
  int i = servers();
  servers_.push_back(&start_on(server_host(i), argv, env, "server" + std::to_string(i) + ".log"));
  return *servers_.back();
}

BackgroundProcess& ClusterBase::start_client(const std::vector<std::string>& argv,
                                             const Environment& env, const std::string& name) {
  client_ = &start_on(client_host(), argv, env, name + ".log");
  return *client_;
}

bool ClusterBase::all_running() const {
  bool running =
      scheduler_ != nullptr && scheduler_->running() && client_ != nullptr && client_->running();
  for (BackgroundProcess* server : servers_) running = running && server->running();
  return running;
}

std::vector<std::string> ClusterBase::client_prefix() const {
  return net_.exec_prefix(client_host());
}

std::string ClusterBase::logs() const {
  std::string text;
  for (const auto& process : started_) {
    text += "--- " + process->log_path().filename().string() + " (pid " +
            std::to_string(process->pid()) + ")\n" + process->log() + "\n";
  }
  return text;
}

std::vector<pid_t> ClusterBase::pids() const {
  std::vector<pid_t> out;
  for (const auto& process : started_) out.push_back(process->pid());
  return out;
}

std::map<std::string, int> ClusterBase::completed_jobs(int total,
                                                       std::chrono::seconds limit) const {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    std::map<std::string, int> completed = completed_jobs();
    int sum = 0;
    for (const auto& [server, jobs] : completed) sum += jobs;
    if (sum >= total || std::chrono::steady_clock::now() >= deadline) return completed;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace kiln::testing
