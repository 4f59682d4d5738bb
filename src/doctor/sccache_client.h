// A private sccache client server for the doctor's probes: its own Unix socket, log and local
// cache in a temporary directory, run in the foreground (SCCACHE_START_SERVER=1,
// SCCACHE_NO_DAEMON=1) as the doctor's own child, and stopped by its pid when the object goes. The
// user's own sccache server, socket and cache are never touched; the user's client configuration
// (SCCACHE_CONF, ~/.config/sccache/config) applies, as it would to kiln build.
//
//   SccacheClient client("/usr/bin/sccache", std::chrono::seconds(20));
//   if (std::string why = client.start(); why.empty())
//     std::cout << client.command({"--dist-status"}).output;
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "internal/spawn.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"

namespace kiln::doctor::detail {

class SccacheClient {
 public:
  SccacheClient(std::filesystem::path sccache, std::chrono::seconds timeout);
  // Stops the server's process group (SIGTERM, then SIGKILL) and reaps it.
  ~SccacheClient();
  SccacheClient(const SccacheClient&) = delete;
  SccacheClient& operator=(const SccacheClient&) = delete;

  // Starts the server and waits, up to the timeout, until it listens. "" when it does; else what
  // happened, in words (it exited, or it did not listen in time: sccache contacts the scheduler
  // before it listens, so a scheduler that accepts connections and never answers holds it).
  std::string start();
  // `sccache <args>` as a client of this server, up to `limit` (default: the timeout). A server
  // that has stopped gives a result that is not ok() and says so, without running anything (a
  // client would start a server of its own).
  RunResult command(std::vector<std::string> args,
                    std::optional<std::chrono::seconds> limit = std::nullopt);
  // What the server logged (SCCACHE_ERROR_LOG at debug level, then its stdout and stderr).
  std::string log() const;
  // A scratch directory for probe sources and objects.
  std::filesystem::path scratch() const { return dir_ / "probe"; }

 private:
  std::filesystem::path sccache_;
  std::chrono::seconds timeout_;
  TempDirectory dir_;
  std::filesystem::path socket_;
  std::optional<internal::Child> server_;
};

}  // namespace kiln::doctor::detail
