// sccache's client servers for one kiln build: one per build slot, started on that slot's first
// sccache job and stopped with the build, so that the difference of a slot's statistics before
// and after a job is that job's own account (remote, local or from sccache's cache). They run
// with kiln's environment (SCCACHE_CONF, SCCACHE_DIR, ...), so a user's sccache-dist client
// configuration applies, but never touch the user's own sccache server.
#pragma once

#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine_account.h"
#include "internal/fd.h"
#include "kiln/launcher.h"
#include "kiln/process.h"

namespace kiln::build::detail {

// The counters of `sccache --show-stats --stats-format json` that say where compiles ran.
struct SccacheStats {
  long hits = 0;         // served from sccache's cache
  long misses = 0;       // compiled (remotely or locally)
  long dist_errors = 0;  // distributed compiles that failed and fell back to a local one
  long not_compile = 0;  // calls sccache ran as they were (links, -E, ...)
  long unsupported = 0;  // compilers sccache does not know
  long non_cacheable = 0;
  long compile_fails = 0;
  std::map<std::string, long> dist{};  // build server -> compiles it ran
};

// Parses sccache's JSON statistics. Throws UnexpectedOutput naming what is missing.
SccacheStats parse_sccache_stats(std::string_view json);

// What a job's compiles did, from the statistics of its slot's server before and after it.
EngineAccount sccache_account(const SccacheStats& before, const SccacheStats& after);

// What `sccache --dist-status` says of the cluster.
struct DistStatus {
  std::string scheduler;  // its URL; "" when distribution is disabled or failed
  int servers = 0;
  int cpus = 0;
  std::string problem;  // why there is no cluster to use ("" when there is one)
};
DistStatus parse_dist_status(std::string_view output);

class SccacheServers {
 public:
  // `sccache`: the program; sockets go in `dir` (short: a Unix socket path has ~100 bytes).
  // `server_env`: set in the servers' environment besides kiln's own (tests: a config of theirs).
  SccacheServers(std::string sccache, std::filesystem::path dir,
                 Launcher::Environment server_env = {});
  // Stops every server (sccache --stop-server, then its process group is killed) and waits.
  ~SccacheServers();
  SccacheServers(const SccacheServers&) = delete;
  SccacheServers& operator=(const SccacheServers&) = delete;

  // The environment of an sccache client that uses `slot`'s server, which is started (and
  // waited for) on first use. Throws Error when it does not start or has stopped.
  Launcher::Environment client_env(int slot);
  // Starts the servers of slots 0..slots-1 now, one after another, before any compile runs on
  // them. A server clears its toolchain staging directory ([dist] cache_dir/client/toolchain_tmp,
  // shared by all of them) when it starts, which deletes a toolchain another server is packaging
  // there at that moment: that compile then falls back to a local one ("failed to open file
  // .../toolchain_tmp/.tmpXXXX"). A server that does not start is left to client_env() to report.
  void start(int slots);
  // `slot`'s server's statistics now.
  SccacheStats stats(int slot);
  // The cluster as `slot`'s server sees it (it starts the server).
  DistStatus dist_status(int slot);

 private:
  struct Server;
  Server& server(int slot);
  RunResult client(int slot, std::vector<std::string> args);

  std::string sccache_;
  std::filesystem::path dir_;
  Launcher::Environment server_env_;
  std::mutex mutex_;
  std::string failed_;  // why a server could not start; then none is tried again
  std::map<int, std::unique_ptr<Server>> servers_;
};

}  // namespace kiln::build::detail
