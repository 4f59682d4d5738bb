// sccache's client servers for a build, and what their statistics say about each job.
#include "sccache_servers.h"

#include <fmt/format.h>

#include "kiln/error.h"

namespace kiln::build::detail {
namespace {

std::string plural(long n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string joined(const std::vector<std::string>& hosts) {
  std::string text;
  for (const std::string& host : hosts) text += (text.empty() ? "" : ", ") + host;
  return text;
}

}  // namespace

EngineAccount sccache_account(const sccache::Stats& before, const sccache::Stats& after) {
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

SccacheServers::SccacheServers(std::string sccache, Launcher::Environment server_env)
    : sccache_(std::move(sccache)), server_env_(std::move(server_env)) {}

sccache::Server& SccacheServers::server(int slot) {
  std::lock_guard lock(mutex_);
  // One server that could not start says why for all: the next would wait as long to fail.
  if (!failed_.empty()) throw Error(failed_);
  std::unique_ptr<sccache::Server>& server = servers_[slot];
  if (server) {
    if (!server->running()) {
      throw Error(fmt::format("kiln's sccache server for slot {} has stopped", slot));
    }
    return *server;
  }
  server =
      std::make_unique<sccache::Server>(sccache_, sccache::Server::Options{.env = server_env_});
  if (std::string why = server->start(); !why.empty()) {
    servers_.erase(slot);
    failed_ = why;
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

Launcher::Environment SccacheServers::client_env(int slot) { return server(slot).client_env(); }

}  // namespace kiln::build::detail
