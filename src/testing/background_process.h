// A long-running program a test starts and must stop (a scheduler, a build server): started
// from an argv (never a shell) in a process group of its own, stdout and stderr appended to a log
// file, stdin /dev/null. The test holds its pid; stop() and the destructor end the whole group
// (SIGTERM, then SIGKILL after a bound) and reap the child, so nothing outlives the test even
// when it fails.
//
//   kiln::testing::BackgroundProcess scheduler({"sccache-dist", "scheduler", "--config", conf},
//                                              {{"SCCACHE_NO_DAEMON", "1"}}, dir / "sched.log");
//   if (!scheduler.running()) FAIL() << scheduler.log();
//   scheduler.kill();   // SIGKILL now, as a machine that dies
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::testing {

class BackgroundProcess {
 public:
  using Environment = std::map<std::string, std::optional<std::string>>;

  // Starts argv[0] (looked up in PATH unless it has a '/') with this process's environment
  // changed by `env` (std::nullopt unsets). When it cannot be started, pid() is -1 and log() says
  // why.
  BackgroundProcess(const std::vector<std::string>& argv, const Environment& env,
                    std::filesystem::path log);
  ~BackgroundProcess() { stop(); }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  // True while the child has not exited (reaps it when it has).
  bool running();
  // SIGTERM to the group, SIGKILL after `grace` if the child still runs; reaps the child.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(3));
  // SIGKILL to the group at once; reaps the child.
  void kill();
  // What the program wrote so far.
  std::string log() const;
  const std::filesystem::path& log_path() const { return log_; }

 private:
  bool reap(bool block);

  std::filesystem::path log_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

}  // namespace kiln::testing
