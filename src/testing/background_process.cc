#include "testing/background_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "testing/test_support.h"

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
  for (const auto& [name, value] : merged) {
    std::string entry = name;
    entry += '=';
    entry += value;
    out.push_back(std::move(entry));
  }
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
  // Everything the child needs is made before fork(): after it, in a threaded parent, only
  // async-signal-safe calls.
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = environment_with(env);
  std::vector<char*> arg_ptrs = pointers(args);
  std::vector<char*> env_ptrs = pointers(envs);
  int out = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int ready[2] = {-1, -1};  // close-on-exec: the parent reads EOF at exec, errno on failure
  if (out < 0 || in < 0 || ::pipe2(ready, O_CLOEXEC) != 0) {
    std::ofstream(log_, std::ios::app)
        << "could not start " << argv[0] << ": " << std::strerror(errno) << "\n";
    for (int fd : {out, in, ready[0], ready[1]})
      if (fd >= 0) ::close(fd);
    return;
  }
  pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    // Dies with the test process however it ends (an abort skips every destructor).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::setpgid(0, 0);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execvpe(arg_ptrs[0], arg_ptrs.data(), env_ptrs.data());
    int error = errno;
    ssize_t ignored = ::write(ready[1], &error, sizeof error);
    (void)ignored;
    ::_exit(127);
  }
  ::close(ready[1]);
  int error = pid_ < 0 ? errno : 0;
  if (pid_ > 0 && ::read(ready[0], &error, sizeof error) == sizeof error) reap(true);
  for (int fd : {out, in, ready[0]}) ::close(fd);
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
