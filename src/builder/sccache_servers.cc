// sccache's client servers for a build, and what their statistics say about each job.
#include "sccache_servers.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/files.h"
#include "kiln/error.h"

namespace kiln::build::detail {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

long sum_counts(const json& counts) {
  long total = 0;
  for (const auto& [name, value] : counts.items()) total += value.get<long>();
  return total;
}

std::string plural(long n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string joined(const std::vector<std::string>& hosts) {
  std::string text;
  for (const std::string& host : hosts) text += (text.empty() ? "" : ", ") + host;
  return text;
}

// How long a server may take to listen, and a statistics query to answer.
constexpr auto kStartLimit = 20s;
constexpr auto kQueryLimit = 10s;

}  // namespace

SccacheStats parse_sccache_stats(std::string_view text) {
  try {
    json stats = json::parse(text).at("stats");
    SccacheStats result{.hits = sum_counts(stats.at("cache_hits").at("counts")),
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

EngineAccount sccache_account(const SccacheStats& before, const SccacheStats& after) {
  long hits = after.hits - before.hits;
  long misses = after.misses - before.misses;
  long errors = after.dist_errors - before.dist_errors;
  EngineAccount account;
  long remote = 0;
  for (const auto& [server, count] : after.dist) {
    auto was = before.dist.find(server);
    long ran = count - (was == before.dist.end() ? 0 : was->second);
    if (ran <= 0) continue;
    remote += ran;
    account.hosts.push_back(server);
  }
  std::string on = account.hosts.empty() ? "" : " on " + joined(account.hosts);
  std::string from_cache = hits > 0 ? ", " + plural(hits, "cache hit", "cache hits") : "";
  std::string fell_back =
      errors > 0 ? fmt::format(" after {} (fell back)",
                               plural(errors, "failed distribution", "failed distributions"))
                 : "";
  if (misses <= 0 && hits > 0) {
    account.ran = "engine-cache";
    account.detail = "sccache: " + plural(hits, "cache hit", "cache hits");
  } else if (misses > 0 && remote >= misses) {
    account.ran = "remote";
    account.detail =
        fmt::format("sccache: {}{}{}", plural(remote, "compile", "compiles"), on, from_cache);
  } else if (remote > 0) {
    account.ran = "mixed";
    account.detail = fmt::format("sccache: {} of {} compiles{}, {} locally{}{}", remote, misses, on,
                                 misses - remote, fell_back, from_cache);
  } else if (misses > 0) {
    account.ran = "local";
    account.detail = fmt::format("sccache: {} locally{}{}", plural(misses, "compile", "compiles"),
                                 fell_back, from_cache);
  } else {
    account.ran = "local";
    if (after.not_compile > before.not_compile) {
      account.detail = "sccache: not a compile it caches or distributes; ran as is";
    } else if (after.unsupported > before.unsupported) {
      account.detail = "sccache: a compiler it does not support; ran as is";
    } else {
      account.detail = "sccache: nothing it could cache or distribute; ran locally";
    }
  }
  return account;
}

DistStatus parse_dist_status(std::string_view text) {
  DistStatus status;
  try {
    json value = json::parse(text);
    if (value.contains("SchedulerStatus")) {
      const json& scheduler = value["SchedulerStatus"];
      status.scheduler = scheduler.at(0).get<std::string>();
      status.servers = scheduler.at(1).at("num_servers").get<int>();
      status.cpus = scheduler.at(1).at("num_cpus").get<int>();
      if (status.servers == 0) status.problem = "the scheduler has no build servers";
    } else if (value.contains("Disabled")) {
      status.problem = "distributed compilation is not configured (no [dist] in sccache's config)";
    } else if (value.contains("NotConnected")) {
      status.problem = "the scheduler cannot be reached: " + value["NotConnected"].dump();
    } else {
      status.problem = "sccache --dist-status: " + std::string(text);
    }
  } catch (const json::exception&) {
    status.problem =
        "sccache --dist-status: unexpected output: " + std::string(text.substr(0, 300));
  }
  return status;
}

struct SccacheServers::Server {
  fs::path socket;
  internal::Pipe stop = internal::make_pipe();  // written to stop it: its RunScope is cancelled
  std::future<RunResult> process;

  // Kills the server (its process group), waits for it, and returns what it printed, or why it
  // could not be started.
  std::string kill() {
    char byte = 1;
    (void)!::write(stop.write.get(), &byte, 1);
    try {
      return process.get().output;
    } catch (const std::exception& e) {
      return e.what();
    }
  }
};

SccacheServers::SccacheServers(std::string sccache, fs::path dir, Launcher::Environment server_env)
    : sccache_(std::move(sccache)), dir_(std::move(dir)), server_env_(std::move(server_env)) {}

SccacheServers::~SccacheServers() {
  std::lock_guard lock(mutex_);
  for (auto& [slot, server] : servers_) {
    try {
      if (server->process.wait_for(0s) != std::future_status::ready) {
        run({.argv = {sccache_, "--stop-server"},
             .env = {{"SCCACHE_SERVER_UDS", server->socket.string()}},
             .timeout = kQueryLimit});
      }
    } catch (const Error&) {  // NOLINT(bugprone-empty-catch): killed below all the same
    }
  }
  for (auto& [slot, server] : servers_) server->kill();
}

SccacheServers::Server& SccacheServers::server(int slot) {
  std::lock_guard lock(mutex_);
  // One server that could not start says why for all: the next would wait as long to fail.
  if (!failed_.empty()) throw Error(failed_);
  std::unique_ptr<Server>& server = servers_[slot];
  if (server) {
    if (server->process.wait_for(0s) == std::future_status::ready) {
      throw Error(fmt::format("kiln's sccache server for slot {} has stopped", slot));
    }
    return *server;
  }
  server = std::make_unique<Server>();
  server->socket = dir_ / fmt::format("sccache-{}.sock", slot);
  int stop = server->stop.read.get();
  Launcher::Environment env = server_env_;
  // `sccache` with SCCACHE_START_SERVER=1 is the server itself, in the foreground: kiln's own
  // child, in its own process group, killed with kiln (`sccache --start-server` would leave it
  // as a grandchild whose pid kiln never learns).
  env.insert_or_assign("SCCACHE_START_SERVER", "1");
  env.insert_or_assign("SCCACHE_NO_DAEMON", "1");
  env.insert_or_assign("SCCACHE_SERVER_UDS", server->socket.string());
  env.insert_or_assign("SCCACHE_IDLE_TIMEOUT", "0");
  env.insert_or_assign("SCCACHE_SERVER_PORT", std::nullopt);
  server->process = std::async(std::launch::async, [this, stop, env = std::move(env)] {
    RunScope scope({.cancel_fd = stop});
    return run({.argv = {sccache_}, .env = env});
  });
  auto deadline = std::chrono::steady_clock::now() + kStartLimit;
  while (!fs::exists(server->socket) && std::chrono::steady_clock::now() < deadline) {
    if (server->process.wait_for(5ms) == std::future_status::ready) break;
  }
  if (!fs::exists(server->socket)) {
    // Not listening yet: sccache connects to the scheduler first, and one that accepts and
    // never answers holds it there.
    bool exited = server->process.wait_for(0s) == std::future_status::ready;
    std::string output = server->kill();
    servers_.erase(slot);
    failed_ = fmt::format("kiln's sccache server did not start: {}{}",
                          exited ? "it exited"
                                 : "it did not listen within 20 s (is the "
                                   "scheduler in sccache's [dist] config answering?)",
                          output.empty() ? "" : ": " + output);
    throw Error(failed_);
  }
  return *server;
}

void SccacheServers::start(int slots) {
  for (int slot = 0; slot < slots; ++slot) {
    try {
      server(slot);
    } catch (const Error&) {  // NOLINT(bugprone-empty-catch): client_env() reports it per job
    }
  }
}

Launcher::Environment SccacheServers::client_env(int slot) {
  // Were kiln's server gone, a client would start a detached one of its own: it then ends 30 s
  // after its last compile instead of outliving the build for good.
  return {{"SCCACHE_SERVER_UDS", server(slot).socket.string()},
          {"SCCACHE_IDLE_TIMEOUT", "30"},
          {"SCCACHE_SERVER_PORT", std::nullopt}};
}

RunResult SccacheServers::client(int slot, std::vector<std::string> args) {
  args.insert(args.begin(), sccache_);
  RunResult result = run({.argv = std::move(args),
                          .env = client_env(slot),
                          .merge_stderr = false,
                          .timeout = kQueryLimit});
  if (!result.ok()) throw tool_failed("sccache:", result);
  return result;
}

SccacheStats SccacheServers::stats(int slot) {
  return parse_sccache_stats(client(slot, {"--show-stats", "--stats-format", "json"}).output);
}

DistStatus SccacheServers::dist_status(int slot) {
  return parse_dist_status(client(slot, {"--dist-status"}).output);
}

}  // namespace kiln::build::detail
