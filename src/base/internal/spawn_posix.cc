#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "internal/path_list.h"
#include "internal/remote_cache_level.h"
#include "internal/spawn.h"
#include "kiln/error.h"
#include "kiln/settings.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace kiln::internal {
namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

std::atomic<int> guard_fd{-1};

// +pgid when a group starts, -pgid before it is reaped: 4 bytes, so each write is atomic however
// many threads write. A guard that is gone (EPIPE) changes nothing here.
void tell_guard(pid_t group, bool started) noexcept {
  int fd = guard_fd.load(std::memory_order_relaxed);
  if (fd < 0) return;
  std::int32_t record = started ? group : -group;
  (void)write_without_sigpipe(fd, reinterpret_cast<const char*>(&record), sizeof record);
}

// posix_spawn's attribute and file-action objects, destroyed on every path out.
class SpawnAttributes {
 public:
  SpawnAttributes() {
    posix_spawnattr_init(&attr_);
    posix_spawn_file_actions_init(&actions_);
  }
  ~SpawnAttributes() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attr_);
  }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;

  posix_spawnattr_t* attr() { return &attr_; }
  posix_spawn_file_actions_t* actions() { return &actions_; }

 private:
  posix_spawnattr_t attr_;
  posix_spawn_file_actions_t actions_;
};

void check_spawn_call(int rc, const char* what) {
  if (rc != 0) throw SystemError(what, rc);
}

// The child's dup2s run in order, so a source descriptor that an earlier pair's target
// overwrites (a caller's file at fd 4 meant for stdout, in a spec that maps a pipe onto 4 first)
// would hand the child the wrong file. Such sources are duplicated, in the parent, above every
// target first; `moved` keeps the duplicates open until the child is spawned.
std::vector<std::pair<int, int>> untangled_fds(const SpawnSpec& spec,
                                               std::vector<UniqueFd>& moved) {
  int highest = 2;
  for (auto [parent_fd, child_fd] : spec.fds) highest = std::max(highest, child_fd);
  std::vector<std::pair<int, int>> fds = spec.fds;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    int source = fds[i].first;
    bool overwritten = false;
    for (std::size_t j = 0; j < i; ++j) overwritten = overwritten || fds[j].second == source;
    if (!overwritten) continue;
    UniqueFd copy(::fcntl(source, F_DUPFD_CLOEXEC, highest + 1));
    if (!copy) throw SystemError("fcntl F_DUPFD_CLOEXEC", errno);
    fds[i].first = copy.get();
    moved.push_back(std::move(copy));
  }
  return fds;
}

void configure(SpawnAttributes& sa, const SpawnSpec& spec,
               const std::vector<std::pair<int, int>>& fds) {
  short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
  if (spec.new_process_group) flags |= POSIX_SPAWN_SETPGROUP;
  check_spawn_call(posix_spawnattr_setflags(sa.attr(), flags), "posix_spawnattr_setflags");
  // The child starts with default dispositions and an empty mask whatever the host did (a host
  // that ignores SIGPIPE or blocks SIGTERM must not pass that on to compilers).
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  check_spawn_call(posix_spawnattr_setsigdefault(sa.attr(), &all), "posix_spawnattr_setsigdefault");
  check_spawn_call(posix_spawnattr_setsigmask(sa.attr(), &none), "posix_spawnattr_setsigmask");
  if (spec.new_process_group) {
    check_spawn_call(posix_spawnattr_setpgroup(sa.attr(), 0), "posix_spawnattr_setpgroup");
  }

  bool stdin_mapped = false;
  for (auto [parent_fd, child_fd] : fds) {
    stdin_mapped = stdin_mapped || child_fd == 0;
    check_spawn_call(posix_spawn_file_actions_adddup2(sa.actions(), parent_fd, child_fd),
                     "posix_spawn_file_actions_adddup2");
  }
  if (!stdin_mapped) {
    check_spawn_call(posix_spawn_file_actions_addopen(sa.actions(), 0, "/dev/null", O_RDONLY, 0),
                     "posix_spawn_file_actions_addopen(/dev/null)");
  }
  // Descriptors the host opened without close-on-exec (its own or a library's) must not reach
  // the child either: it gets exactly the ones mapped for it.
  int lowest_unmapped = 3;
  for (auto [parent_fd, child_fd] : spec.fds)
    lowest_unmapped = std::max(lowest_unmapped, child_fd + 1);
  check_spawn_call(posix_spawn_file_actions_addclosefrom_np(sa.actions(), lowest_unmapped),
                   "posix_spawn_file_actions_addclosefrom_np");
  if (!spec.cwd.empty()) {
    check_spawn_call(posix_spawn_file_actions_addchdir_np(sa.actions(), spec.cwd.c_str()),
                     "posix_spawn_file_actions_addchdir_np");
  }
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> result;
  result.reserve(strings.size() + 1);
  for (const std::string& s : strings) result.push_back(const_cast<char*>(s.c_str()));
  result.push_back(nullptr);
  return result;
}

[[noreturn]] void throw_spawn_error(const SpawnSpec& spec, int error_number) {
  std::string program = spec.executable.string();
  switch (error_number) {
    case ENOENT:
      throw ToolNotFound(program, fmt::format("cannot run '{}': no such file (or its interpreter "
                                              "is missing)",
                                              program));
    case EACCES:
    case EPERM:
    case EISDIR:
    case ENOEXEC:
      throw ToolNotExecutable(
          program, fmt::format("cannot run '{}': {}", program, std::strerror(error_number)));
    default:
      throw SystemError(fmt::format("posix_spawn('{}')", program), error_number);
  }
}

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    // pidfd_open sets close-on-exec itself; nothing else to do.
    return static_cast<int>(fd);
  }
#endif
  (void)pid;
  return -1;
}

}  // namespace

Child Child::spawn(const SpawnSpec& spec) {
  SpawnAttributes sa;
  std::vector<UniqueFd> moved;
  configure(sa, spec, untangled_fds(spec, moved));
  std::vector<char*> argv = c_strings(spec.argv);
  std::vector<char*> envp = c_strings(spec.environment);
  pid_t pid = -1;
  int rc = 0;
  // ETXTBSY: another thread's child may briefly hold a just-written executable open for writing
  // (between its fork and its exec). It clears within milliseconds.
  for (int attempt = 0; attempt < 50; ++attempt) {
    rc = posix_spawn(&pid, spec.executable.c_str(), sa.actions(), sa.attr(), argv.data(),
                     envp.data());
    if (rc != ETXTBSY) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (rc != 0) throw_spawn_error(spec, rc);
  if (spec.new_process_group) tell_guard(pid, true);
  return Child(pid, spec.new_process_group);
}

Child Child::adopt(pid_t pid) {
  (void)::setpgid(pid, pid);  // fails only once the child did it, or died: both fine
  tell_guard(pid, true);
  return Child(pid, true);
}

Child Child::foreign(pid_t pid, UniqueFd status) {
  tell_guard(pid, true);  // it made a group of its own before its parent answered
  Child child(pid, true);
  child.foreign_ = true;
  child.status_ = std::move(status);
  return child;
}

void set_guard_fd(int fd) noexcept { guard_fd.store(fd); }

Child::Child(pid_t pid, bool own_group) noexcept
    : pid_(pid), parent_(::getpid()), own_group_(own_group), pidfd_(open_pidfd(pid)) {}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      parent_(other.parent_),
      own_group_(other.own_group_),
      foreign_(other.foreign_),
      reaped_(std::exchange(other.reaped_, true)),
      wait_status_(other.wait_status_),
      reaped_at_(other.reaped_at_),
      pidfd_(std::move(other.pidfd_)),
      status_(std::move(other.status_)) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    if (!reaped_ && pid_ > 0) terminate_group(std::chrono::milliseconds(0));
    pid_ = std::exchange(other.pid_, -1);
    parent_ = other.parent_;
    own_group_ = other.own_group_;
    foreign_ = other.foreign_;
    reaped_ = std::exchange(other.reaped_, true);
    wait_status_ = other.wait_status_;
    reaped_at_ = other.reaped_at_;
    pidfd_ = std::move(other.pidfd_);
    status_ = std::move(other.status_);
  }
  return *this;
}

Child::~Child() {
  if (!reaped_ && pid_ > 0) terminate_group(std::chrono::milliseconds(0));
}

bool Child::ours() const noexcept { return parent_ == ::getpid(); }

void Child::forget() noexcept {
  reaped_ = true;  // nothing to signal or wait for from here on
  pidfd_.reset();
  status_.reset();
}

bool Child::has_exited() {
  if (reaped_) return true;
  if (!ours()) throw InvalidState(fmt::format("process {} is not a child of this process", pid_));
  if (foreign_) {
    pollfd p{status_.get(), POLLIN, 0};
    return retry_eintr([&] { return ::poll(&p, 1, 0); }) == 1;
  }
  siginfo_t info{};
  int r = retry_eintr([&] { return ::waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT); });
  if (r == -1) throw SystemError(fmt::format("waitid({})", pid_), errno);
  return info.si_pid == pid_;
}

bool Child::wait_exit_until(std::optional<Clock::time_point> deadline) {
  while (!has_exited()) {
    if (deadline && Clock::now() >= *deadline) return false;
    if (exit_fd() >= 0) {
      pollfd p{exit_fd(), POLLIN, 0};
      poll_until(&p, 1, deadline);
    } else {
      // No pidfd: short sleeps keep the deadline within a millisecond.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return true;
}

void Child::reap() {
  if (reaped_) return;
  if (!ours()) throw InvalidState(fmt::format("process {} is not a child of this process", pid_));
  // Before waitpid: once reaped, the group id may be given to a stranger the guard must not kill.
  if (own_group_) tell_guard(pid_, false);
  int status = 0;
  if (foreign_) {
    status = read_foreign_status();
  } else {
    pid_t r = retry_eintr([&] { return ::waitpid(pid_, &status, 0); });
    if (r == -1) throw SystemError(fmt::format("waitpid({})", pid_), errno);
  }
  reaped_ = true;
  wait_status_ = status;
  reaped_at_ = Clock::now();
  pidfd_.reset();
}

int Child::read_foreign_status() {
  pollfd p{status_.get(), POLLIN, 0};
  poll_until(&p, 1, std::nullopt);
  char message[64] = {};
  ssize_t n = retry_eintr([&] { return ::recv(status_.get(), message, sizeof message - 1, 0); });
  status_.reset();  // its parent reaps it now
  int status = 0;
  if (n > 5 && std::string_view(message, 5) == "exit " &&
      std::sscanf(message + 5, "%d", &status) == 1) {
    return status;
  }
  return SIGKILL;  // the wait status of a process killed by SIGKILL: its parent died
}

bool Child::wait_until(std::optional<Clock::time_point> deadline) {
  if (!wait_exit_until(deadline)) return false;
  reap();
  return true;
}

void Child::signal_group(int signal) noexcept {
  if (reaped_ || pid_ <= 0 || !ours()) return;
  // While the child is unreaped (alive or a zombie) its pid, and so its group id, cannot be
  // reused by another process.
  ::kill(own_group_ ? -pid_ : pid_, signal);
}

void Child::terminate_group(std::chrono::milliseconds grace) noexcept {
  if (reaped_ || pid_ <= 0) return;
  if (!ours()) {  // a forked copy: the child, and its group, are the parent's
    forget();
    return;
  }
  try {
    if (grace.count() > 0) {
      signal_group(SIGTERM);
      wait_exit_until(Clock::now() + grace);  // does not reap: the group id stays ours
    }
    // SIGKILL the group even when the child is already gone: its descendants may have ignored
    // SIGTERM. Only then reap.
    signal_group(SIGKILL);
    reap();
  } catch (...) {
    // waitpid/waitid cannot fail for our own unreaped child; nothing to report from here.
  }
}

std::filesystem::path resolve_executable(const std::string& name, const std::string& path_variable,
                                         const std::filesystem::path& cwd) {
  namespace fs = std::filesystem;
  if (name.empty()) throw InvalidArgument("cannot run a program with an empty name");
  auto check_candidate = [](const fs::path& p) -> int {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (!S_ISREG(st.st_mode) || ::access(p.c_str(), X_OK) != 0) return EACCES;
    return 0;
  };
  if (name.find('/') != std::string::npos) {
    fs::path p = name;
    if (p.is_relative() && !cwd.empty()) p = cwd / p;
    int e = check_candidate(p);
    if (e == 0) return fs::absolute(p);
    if (e == ENOENT || e == ENOTDIR) {
      throw ToolNotFound(name, fmt::format("cannot run '{}': no such file", name));
    }
    if (e == EISDIR)
      throw ToolNotExecutable(name, fmt::format("cannot run '{}': it is a directory", name));
    throw ToolNotExecutable(name,
                            fmt::format("cannot run '{}': it is not an executable file", name));
  }
  std::optional<fs::path> refused;
  for (const std::string& dir : split_path_list(path_variable)) {
    fs::path p = fs::path(dir.empty() ? "." : dir) / name;
    if (p.is_relative() && !cwd.empty()) p = cwd / p;
    int e = check_candidate(p);
    if (e == 0) return fs::absolute(p);
    if ((e == EACCES || e == EISDIR) && !refused) refused = p;
  }
  if (refused) {
    throw ToolNotExecutable(name, fmt::format("cannot run '{}': found {} in PATH, but it is not "
                                              "an executable file",
                                              name, refused->string()));
  }
  throw ToolNotFound(name,
                     fmt::format("cannot run '{}': not found in PATH={}", name, path_variable));
}

std::vector<std::string> make_environment(
    const std::map<std::string, std::optional<std::string>>& overlay, bool replace) {
  std::map<std::string, std::string> vars;
  if (!replace) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string_view entry(*e);
      size_t eq = entry.find('=');
      if (eq == std::string_view::npos) continue;
      vars.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }
  }
  if (!replace) {
    // What this process's command line set (kiln/settings.h) reaches its children as variables.
    for (auto& [name, value] : settings::child_environment()) vars[name] = std::move(value);
  }
  if (!replace && vars.count("KILN_REMOTE_CACHE") != 0) {
    // The parent's credentials never reach a child's environment (the remote layer's hook,
    // internal/remote_cache_level.h).
    for (const auto& [name, value] : remote_cache_child_environment()) {
      if (value) vars[name] = *value;
    }
  }
  for (const auto& [name, value] : overlay) {
    if (name.empty() || name.find('=') != std::string::npos) {
      throw InvalidArgument(fmt::format("invalid environment variable name '{}'", name));
    }
    if (value) {
      vars[name] = *value;
    } else {
      vars.erase(name);
    }
  }
  std::vector<std::string> result;
  result.reserve(vars.size());
  for (const auto& [name, value] : vars) {
    std::string entry = name;
    entry += '=';
    entry += value;
    result.push_back(std::move(entry));
  }
  return result;
}

std::string path_of(const std::vector<std::string>& environment) {
  for (const std::string& entry : environment) {
    if (entry.starts_with("PATH=")) return entry.substr(5);
  }
  return kDefaultPath;
}

}  // namespace kiln::internal
