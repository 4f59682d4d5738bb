// sccache's private client server, its statistics and its view of the cluster.
#include "kiln/sccache.h"

#include <fcntl.h>

#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/fd.h"
#include "internal/files.h"
#include "internal/spawn.h"
#include "kiln/error.h"
#include "kiln/text.h"
#include "sccache_dir.h"

namespace kiln::sccache {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using internal::Clock;
using nlohmann::json;

long sum_counts(const json& counts) {
  long total = 0;
  for (const auto& [name, value] : counts.items()) total += value.get<long>();
  return total;
}

std::string read_or_empty(const fs::path& file) {
  try {
    return internal::is_file(file) ? internal::read_file(file) : "";
  } catch (const Error&) {
    return "";
  }
}

// How long a statistics or status query may take, and the server to stop when asked.
constexpr auto kQueryLimit = 10s;
constexpr auto kStopLimit = 5s;

}  // namespace

Stats parse_stats(std::string_view text) {
  try {
    json stats = json::parse(text).at("stats");
    Stats result{.hits = sum_counts(stats.at("cache_hits").at("counts")),
                 .misses = sum_counts(stats.at("cache_misses").at("counts")),
                 .dist_errors = stats.at("dist_errors").get<long>(),
                 .not_compile = stats.at("requests_not_compile").get<long>(),
                 .unsupported = stats.at("requests_unsupported_compiler").get<long>(),
                 .non_cacheable = stats.at("non_cacheable_compilations").get<long>(),
                 .compile_fails = stats.at("compile_fails").get<long>()};
    for (const auto& [server, count] : stats.at("dist_compiles").items()) {
      result.dist[server] = count.get<long>();
    }
    return result;
  } catch (const json::exception& e) {
    throw UnexpectedOutput(
        fmt::format("sccache --show-stats --stats-format json: unexpected output ({}): {}",
                    e.what(), text.substr(0, 300)));
  }
}

DistStatus parse_dist_status(std::string_view output) {
  DistStatus status;
  try {
    json value = json::parse(output);
    if (value.contains("SchedulerStatus")) {
      const json& scheduler = value["SchedulerStatus"];
      status.state = DistStatus::State::ok;
      status.url = scheduler.at(0).get<std::string>();
      status.servers = scheduler.at(1).at("num_servers").get<int>();
      status.cpus = scheduler.at(1).at("num_cpus").get<int>();
    } else if (value.contains("NotConnected")) {
      status.state = DistStatus::State::not_connected;
      status.url = value["NotConnected"].at(0).get<std::string>();
      status.message = value["NotConnected"].at(1).get<std::string>();
    } else if (value.contains("Disabled")) {
      status.state = DistStatus::State::disabled;
      status.message = value["Disabled"].dump();
    } else {
      status.message = std::string(trimmed(output));
    }
  } catch (const json::exception&) {
    status.state = DistStatus::State::unreadable;
    status.message = std::string(trimmed(output.substr(0, 400)));
  }
  return status;
}

std::string DistStatus::problem() const {
  switch (state) {
    case State::ok:
      return servers > 0 ? "" : "the scheduler at " + url + " has no build servers";
    case State::disabled:
      return "distributed compilation is not configured (no [dist] in sccache's config)";
    case State::not_connected:
      return fmt::format("the scheduler at {} cannot be reached: {}", url, message);
    case State::unreadable:
      break;
  }
  return "sccache --dist-status: unexpected output: " + message;
}

// Members in this order: the process ends before its directory goes, and the directory goes
// before the lock on its owner file is released (sccache_dir.h).
struct Server::State {
  // Its socket (a short path: a socket path has ~100 bytes), logs, scratch.
  internal::SccacheDirectory directory;
  fs::path socket = directory.dir / internal::kSccacheSocketName;
  std::unique_ptr<internal::Child> process{};

  const fs::path& dir() const { return directory.dir.path(); }
};

Server::Server(fs::path sccache, Options options)
    : sccache_(std::move(sccache)),
      options_(std::move(options)),
      state_(std::make_unique<State>(State{.directory = internal::make_sccache_directory()})) {
  fs::create_directory(scratch());
}

Server::~Server() {
  if (!state_->process) return;
  if (running()) (void)command({"--stop-server"}, kStopLimit);
  state_->process->terminate_group(500ms);
}

fs::path Server::scratch() const { return state_->dir() / "scratch"; }

std::string Server::start() {
  static std::once_flag reaped;  // once a process: what killed kilns left
  std::call_once(reaped, internal::reap_sccache_directories);
  internal::UniqueFd out(::open((state_->dir() / "server.out").c_str(),
                                O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!out) throw SystemError("open '" + (state_->dir() / "server.out").string() + "'", errno);
  Launcher::Environment env = options_.env;
  // `sccache` with SCCACHE_START_SERVER=1 is the server itself, in the foreground: kiln's own
  // child, in its own process group, killed with kiln (`sccache --start-server` would leave it
  // as a grandchild whose pid kiln never learns).
  env.insert_or_assign("SCCACHE_START_SERVER", "1");
  env.insert_or_assign("SCCACHE_NO_DAEMON", "1");
  env.insert_or_assign("SCCACHE_SERVER_UDS", state_->socket.string());
  env.insert_or_assign("SCCACHE_SERVER_PORT", std::nullopt);
  env.insert_or_assign("SCCACHE_IDLE_TIMEOUT", "0");
  if (options_.own_cache) env.insert_or_assign("SCCACHE_DIR", (state_->dir() / "cache").string());
  if (options_.debug_log) {
    env.insert_or_assign("SCCACHE_ERROR_LOG", (state_->dir() / "server.log").string());
    env.insert_or_assign("SCCACHE_LOG", "debug");
  }
  internal::SpawnSpec spec;
  spec.executable = sccache_;
  spec.argv = {sccache_.string()};
  spec.environment = internal::make_environment(env, false);
  spec.fds = {{out.get(), 1}, {out.get(), 2}};
  state_->process = std::make_unique<internal::Child>(internal::Child::spawn(spec));
  auto deadline = Clock::now() + options_.start_limit;
  while (!fs::exists(state_->socket) && Clock::now() < deadline) {
    if (state_->process->wait_exit_until(Clock::now() + 10ms)) break;
  }
  if (fs::exists(state_->socket)) return "";
  if (state_->process->has_exited()) {
    state_->process->reap();
    return fmt::format("kiln's sccache server exited at once: {}", last_lines(log(), {}, 8));
  }
  state_->process->terminate_group(500ms);
  // sccache asks the scheduler before it listens: one that accepts and never answers holds it.
  return fmt::format(
      "timed out: kiln's sccache server did not listen within {} s (is the "
      "scheduler in sccache's [dist] config answering?)",
      options_.start_limit.count());
}

bool Server::running() {
  const std::unique_ptr<internal::Child>& process = state_->process;
  return process && !process->reaped() && !process->has_exited();
}

Launcher::Environment Server::client_env() const {
  return {{"SCCACHE_SERVER_UDS", state_->socket.string()},
          {"SCCACHE_SERVER_PORT", std::nullopt},
          {"SCCACHE_START_SERVER", std::nullopt},
          {"SCCACHE_IDLE_TIMEOUT", "30"}};
}

RunResult Server::command(std::vector<std::string> args, std::chrono::seconds limit,
                          const fs::path& cwd) {
  args.insert(args.begin(), sccache_.string());
  if (!running()) {
    RunResult stopped{.output = "kiln's private sccache server is not running"};
    stopped.command_line = format_command_line(args);
    return stopped;
  }
  return run({.argv = std::move(args),
              .cwd = cwd,
              .env = client_env(),
              .merge_stderr = false,
              .timeout = limit});
}

RunResult Server::query(std::vector<std::string> args) {
  RunResult result = command(std::move(args), kQueryLimit);
  if (!result.ok()) throw tool_failed("sccache:", result);
  return result;
}

Stats Server::stats() {
  return parse_stats(query({"--show-stats", "--stats-format", "json"}).output);
}

DistStatus Server::dist_status() { return parse_dist_status(query({"--dist-status"}).output); }

std::string Server::log() const {
  return read_or_empty(state_->dir() / "server.log") + read_or_empty(state_->dir() / "server.out");
}

}  // namespace kiln::sccache
