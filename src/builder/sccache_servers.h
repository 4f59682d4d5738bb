// sccache's client servers for one kiln build: one per build slot (kiln/sccache.h), all
// started before the build's first compile and stopped with the build, so that the difference of a
// slot's statistics before and after a job is that job's own account (remote, local or from
// sccache's cache). They run with kiln's environment (SCCACHE_CONF, SCCACHE_DIR, ...), so a user's
// sccache-dist client configuration applies, but never touch the user's own sccache server.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "engine_account.h"
#include "kiln/launcher.h"
#include "kiln/sccache.h"

namespace kiln::build::detail {

// What a job's compiles did, from the statistics of its slot's server before and after it.
EngineAccount sccache_account(const sccache::Stats& before, const sccache::Stats& after);

class SccacheServers {
 public:
  // `sccache`: the program. `server_env`: set in the servers' environment besides kiln's own
  // (tests: a config of theirs). The servers stop when this goes.
  explicit SccacheServers(std::string sccache, Launcher::Environment server_env = {});

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
  sccache::Stats stats(int slot) { return server(slot).stats(); }
  // The cluster as `slot`'s server sees it (it starts the server): what -j auto asks, before the
  // build starts the others.
  sccache::DistStatus dist_status(int slot) { return server(slot).dist_status(); }

 private:
  sccache::Server& server(int slot);

  std::string sccache_;
  Launcher::Environment server_env_;
  std::mutex mutex_;
  std::string failed_;  // why a server could not start; then none is tried again
  std::map<int, std::unique_ptr<sccache::Server>> servers_;
};

}  // namespace kiln::build::detail
