#include "testing/background_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <thread>

#include "testing/test_support.h"

extern char** environ;

namespace kiln::testing {
namespace {

std::vector<std::string> environment_with(const BackgroundProcess::Environment& changes) {
  std::map<std::string, std::string> merged;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text = *entry;
    size_t eq = text.find('=');
    if (eq != std::string::npos) merged[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (const auto& [name, value] : changes) {
    if (value) {
      merged[name] = *value;
    } else {
      merged.erase(name);
    }
  }
  std::vector<std::string> out;
  for (const auto& [name, value] : merged) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv, const Environment& env,
                                     std::filesystem::path log)
    : log_(std::move(log)) {
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = environment_with(env);
  std::vector<char*> arg_ptrs = pointers(args);
  std::vector<char*> env_ptrs = pointers(envs);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  int error = ::posix_spawnp(&pid_, arg_ptrs[0], &actions, &attr, arg_ptrs.data(), env_ptrs.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    pid_ = -1;
    std::ofstream(log_, std::ios::app)
        << "could not start " << argv[0] << ": " << std::strerror(error) << "\n";
  }
}

bool BackgroundProcess::reap(bool block) {
  if (pid_ <= 0 || reaped_) return true;
  int status = 0;
  pid_t got = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (got == pid_ || (got < 0 && errno == ECHILD)) reaped_ = true;
  return reaped_;
}

bool BackgroundProcess::running() { return pid_ > 0 && !reap(false); }

void BackgroundProcess::stop(std::chrono::milliseconds grace) {
  if (!running()) return;
  ::kill(-pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (!reap(false) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The group too: a child it started (a sandboxed compile) may outlive it.
  ::kill(-pid_, SIGKILL);
  reap(true);
}

void BackgroundProcess::kill() {
  if (!running()) return;
  ::kill(-pid_, SIGKILL);
  reap(true);
}

std::string BackgroundProcess::log() const { return read_file(log_); }

}  // namespace kiln::testing
