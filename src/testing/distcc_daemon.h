// A real distccd on 127.0.0.1 (never any other address) for tests of the distcc launcher.
#pragma once

#include <filesystem>
#include <future>
#include <string>

#include "kiln/launcher.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"

namespace kiln::testing {

class DistccDaemon {
 public:
  // Starts distccd and waits until it accepts connections. available() is false (and why() says
  // why) when distcc is not installed or the daemon did not start.
  DistccDaemon();
  // Stops the daemon's whole process group (it pre-forks workers).
  ~DistccDaemon();
  DistccDaemon(const DistccDaemon&) = delete;
  DistccDaemon& operator=(const DistccDaemon&) = delete;

  bool available() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  int port() const { return port_; }
  // The client's environment: DISTCC_HOSTS of this daemon, no local fallback, its own state dir.
  Launcher::Environment client_env() const;
  std::string log() const;
  // Waits up to 10 s until the log holds `count` occurrences of `text` (the daemon writes its
  // job summary after the client has its object); returns the occurrences seen.
  size_t wait_for_log(const std::string& text, size_t count = 1) const;

 private:
  TempDirectory state_;
  TempDirectory shared_;
  std::filesystem::path log_;
  std::filesystem::path pid_file_;
  int port_ = -1;
  std::string why_;
  std::future<RunResult> daemon_;
};

}  // namespace kiln::testing
