// sccache as kiln drives it: a private client server (its own Unix socket, in the foreground as
// kiln's own child, stopped by pid), and sccache's own words about where compiles ran (its JSON
// statistics) and about the cluster (`--dist-status`). kiln build runs one server per build slot
// and accounts for each job from the difference of its statistics; kiln doctor --dist runs one
// to probe the cluster. The user's own sccache server, socket and port are never touched; the
// user's client configuration (SCCACHE_CONF, ~/.config/sccache/config, SCCACHE_DIR) applies.
// Each server has a private directory (mode 0700) for its socket and logs: in $TMPDIR, or, when
// $TMPDIR is too deep for a socket path (about 100 bytes), in /run/user/<uid> or /tmp. Starting
// a server first removes the directories servers of killed kilns left behind.
//
//   sccache::Server server("/usr/bin/sccache", {});
//   if (std::string why = server.start(); why.empty())
//     std::cout << server.dist_status().cpus;
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/launcher.h"
#include "kiln/process.h"

namespace kiln::sccache {

// The counters of `sccache --show-stats --stats-format json` that say where compiles ran.
struct Stats {
  long hits = 0;         // served from sccache's cache
  long misses = 0;       // compiled (remotely or locally)
  long dist_errors = 0;  // distributed compiles that failed and fell back to a local one
  long not_compile = 0;  // calls sccache ran as they were (links, -E, ...)
  long unsupported = 0;  // compilers sccache does not know
  long non_cacheable = 0;
  long compile_fails = 0;
  std::map<std::string, long> dist{};  // build server -> compiles it ran
};
// Throws UnexpectedOutput naming what is missing.
Stats parse_stats(std::string_view json);

// `sccache --dist-status`: {"SchedulerStatus":[url,{"num_servers":N,"num_cpus":C,...}]},
// {"Disabled":...} or {"NotConnected":[url,message]}.
struct DistStatus {
  enum class State { ok, disabled, not_connected, unreadable } state = State::unreadable;
  std::string url{};
  int servers = 0;
  int cpus = 0;
  std::string message{};  // sccache's words when not ok
  // Why there is no cluster to send compiles to, in words; "" when there is one.
  std::string problem() const;
};
DistStatus parse_dist_status(std::string_view output);

class Server {
 public:
  struct Options {
    // How long it may take to listen: sccache asks the scheduler before it does.
    std::chrono::seconds start_limit{20};
    // Set in the server's environment besides the caller's own.
    Launcher::Environment env{};
    // Log at debug level into log() (SCCACHE_ERROR_LOG), e.g. to say why a compile stayed local.
    bool debug_log = false;
    // An empty cache of its own (SCCACHE_DIR in its directory) instead of the user's: a probe
    // compile must not come from the cache.
    bool own_cache = false;
  };

  // Nothing runs until start().
  Server(std::filesystem::path sccache, Options options);
  // Asks the server to stop, then SIGTERM and SIGKILL to its process group; reaps it.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Starts the server and waits until it listens. "" when it does; else what happened, in words
  // (it exited, and its last lines; or it did not listen in time).
  std::string start();
  bool running();
  // The environment of an sccache client of this server. Were the server gone after all, such a
  // client would start a detached one of its own: that one ends 30 s after its last request.
  Launcher::Environment client_env() const;
  // `sccache <args>` as a client of this server, in `cwd` (default: the caller's), up to `limit`.
  // A stopped server gives a result that is not ok() and says so, without running anything.
  RunResult command(std::vector<std::string> args, std::chrono::seconds limit,
                    const std::filesystem::path& cwd = {});
  // Its statistics now. Throws ToolFailed or UnexpectedOutput.
  Stats stats();
  // The cluster as it sees it. Throws ToolFailed when sccache does not answer.
  DistStatus dist_status();
  // What the server printed, after its debug log when there is one.
  std::string log() const;
  // A scratch directory of its own (removed with it).
  std::filesystem::path scratch() const;

 private:
  // Its directory and the lock that tells a later kiln the directory is in use, its socket, and
  // the server's process once started (src/toolchains/sccache.cc).
  struct State;

  RunResult query(std::vector<std::string> args);

  std::filesystem::path sccache_;
  Options options_;
  std::unique_ptr<State> state_;
};

}  // namespace kiln::sccache
