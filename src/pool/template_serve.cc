// The worker template's side (pool.h, serve_template): prepares, then forks workers (and
// successors of itself) with clone(CLONE_PARENT), so that each is its parent's child.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "internal/fd.h"
#include "kiln/pool.h"
#include "protocol.h"
#include "template_fork.h"
#include "template_messages.h"
#include "template_service.h"

namespace kiln::internal {

int thread_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return 1;
}

std::string describe_threads() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    names.push_back(name);
  }
  std::string text = fmt::format("{} threads run in it after its preparation (", names.size());
  for (std::size_t i = 0; i < names.size(); ++i) text += (i ? ", " : "") + names[i];
  return text + ")";
}

// A throwaway fork: it runs the fork handlers of the libraries loaded here, which stop the
// threads of those that have them (OpenBLAS's), then exits at once.
void run_fork_handlers(const pool::TemplateHooks& hooks) {
  if (hooks.before_fork) hooks.before_fork();
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  if (hooks.after_fork_in_parent) hooks.after_fork_in_parent();
  if (pid > 0) (void)retry_eintr([&] { return ::waitpid(pid, nullptr, 0); });
}

// The numbers a forked worker's protocol descriptors take (protocol.h) beside the template's
// control socket. The template holds them with /dev/null from its start, before it imports
// anything, so that what its imports open lands above them, as in a fresh worker: a forked worker
// keeps every descriptor the template's modules hold (a log file logging.basicConfig opened) under
// the number their Python objects know, and its protocol gets exactly the numbers a started one
// has.
namespace {
constexpr int kFirstReserved = kTemplateFd + 1;
constexpr int kLastReserved = std::max({kRequestFd, kResponseFd, kBoardFd});

// The file the reserved numbers hold (/dev/null's), and whether each got it.
struct Placeholders {
  dev_t dev = 0;
  ino_t ino = 0;
  bool held[kLastReserved + 1] = {};
};
Placeholders placeholders;

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

bool holds_placeholder(int fd) {
  struct stat st {};
  return fd >= kTemplateFd && fd <= kLastReserved && placeholders.held[fd] &&
         ::fstat(fd, &st) == 0 && st.st_dev == placeholders.dev && st.st_ino == placeholders.ino;
}
}  // namespace

// Puts /dev/null on every reserved number that is free; one that is not stays unreserved (and
// the template says it cannot fork, held_reserved_fd).
void reserve_worker_fds() {
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!null || ::fstat(null.get(), &st) != 0) return;
  placeholders.dev = st.st_dev;
  placeholders.ino = st.st_ino;
  for (int fd = kFirstReserved; fd <= kLastReserved; ++fd) {
    if (fd == null.get() || is_open(fd)) continue;
    placeholders.held[fd] = ::dup3(null.get(), fd, O_CLOEXEC) == fd;
  }
  if (null.get() >= kFirstReserved && null.get() <= kLastReserved) {  // it took a free number
    placeholders.held[null.release()] = true;
  }
}

void reserve_fd(int fd) {
  if (fd < kTemplateFd || fd > kLastReserved) return;
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (null.get() == fd) {  // it took the free number itself
    placeholders.held[null.release()] = true;
  } else if (null && !is_open(fd)) {
    placeholders.held[fd] = ::dup3(null.get(), fd, O_CLOEXEC) == fd;
  }
}

// Why a worker's descriptors cannot go onto `targets` here without taking a number from under
// something the template's modules hold; "" when they can.
std::string taken_target(const std::vector<int>& targets, int control) {
  for (int fd : targets) {
    if (fd <= 2 || fd == control || holds_placeholder(fd) || !is_open(fd)) continue;
    return fmt::format(
        "descriptor {}, which its workers get from the pool, is open in the template (what it "
        "imported opened or replaced it)",
        fd);
  }
  return {};
}

// Why the template must not fork workers at all: a reserved number it lost; "" when none.
std::string held_reserved_fd(int control) {
  std::vector<int> reserved;
  for (int fd = kFirstReserved; fd <= kLastReserved; ++fd) {
    if (fd != control) reserved.push_back(fd);
  }
  return taken_target(reserved, control);
}

// In the forked worker: its descriptors onto their numbers (the control socket and the
// placeholders they replace); every other descriptor stays, as the template's modules hold them.
void place_fds(std::vector<UniqueFd>& fds, const std::vector<int>& targets, int control) {
  // First above every target, so that no dup2 below replaces a source still to be placed.
  int above = *std::max_element(targets.begin(), targets.end()) + 1;
  std::vector<UniqueFd> high;
  for (UniqueFd& fd : fds) high.emplace_back(::fcntl(fd.get(), F_DUPFD_CLOEXEC, above));
  for (std::size_t i = 0; i < targets.size(); ++i) {
    (void)::dup2(high[i].get(), targets[i]);  // dup2 clears close-on-exec on the target
  }
  for (UniqueFd& fd : fds) {
    if (std::find(targets.begin(), targets.end(), fd.get()) != targets.end()) (void)fd.release();
  }
  fds.clear();  // the received numbers, not targets: closed
  if (std::find(targets.begin(), targets.end(), control) == targets.end()) ::close(control);
  for (int fd = kFirstReserved; fd <= kLastReserved; ++fd) {
    if (holds_placeholder(fd) && std::find(targets.begin(), targets.end(), fd) == targets.end()) {
      ::close(fd);  // a number a started worker would not have open
    }
  }
}

std::optional<ForkRequest> parse_fork_request(const std::string& request,
                                              std::vector<UniqueFd>& fds) {
  std::vector<std::string> lines = split_lines(request);
  ForkRequest fork;
  std::size_t i = 1;
  std::size_t next_fd = 0;
  for (; i < lines.size() && !lines[i].empty(); ++i) {
    const std::string& line = lines[i];
    if (line.starts_with("umask=")) {
      fork.umask = static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8) & 0777);
    } else if (next_fd >= fds.size()) {
      return std::nullopt;
    } else if (line == "cwd") {
      fork.cwd = std::move(fds[next_fd++]);
    } else {
      fork.targets.push_back(std::atoi(line.c_str()));
      fork.fds.push_back(std::move(fds[next_fd++]));
    }
  }
  if (fork.targets.empty() || next_fd != fds.size()) return std::nullopt;
  fds.clear();
  fork.environment.assign(lines.begin() + static_cast<long>(std::min(i + 1, lines.size())),
                          lines.end());
  return fork;
}

pool::ForkedWorker become_worker(ForkRequest& fork, int control,
                                 const std::vector<std::string>& args, pid_t parent) {
  place_fds(fork.fds, fork.targets, control);
  if (fork.cwd) {
    (void)::fchdir(fork.cwd.get());
    fork.cwd.reset();
  }
  if (fork.umask) (void)::umask(*fork.umask);
  ::clearenv();
  for (const std::string& entry : fork.environment) {
    std::size_t eq = entry.find('=');
    if (eq != std::string::npos) ::setenv(entry.substr(0, eq).c_str(), entry.c_str() + eq + 1, 1);
  }
  pool::ForkedWorker worker{std::vector<std::string>(args.begin(), args.end() - 2),
                            fork.environment};
  worker.args.insert(worker.args.end(), {kWorkerFlag, std::to_string(parent)});
  return worker;
}

pid_t clone_as_sibling() {
  // fork() whose child is the template's parent's child. No stack of its own (0): the child
  // goes on from here on a copy of this one's, as with fork.
  return static_cast<pid_t>(::syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0));
}

}  // namespace kiln::internal

namespace kiln::pool {
namespace {

// Forks with the hooks around it. In the child (in a process group of its own) returns 0; in
// the template answers the parent with the child's pid (or why there is none), closes `fds`
// and returns the pid (-1 when the fork failed).
pid_t fork_answering(int control, std::vector<internal::UniqueFd>& fds,
                     const TemplateHooks& hooks) {
  if (hooks.before_fork) hooks.before_fork();
  pid_t pid = internal::clone_as_sibling();
  if (pid == 0) {
    if (hooks.after_fork_in_child) hooks.after_fork_in_child();
    (void)::setpgid(0, 0);
    return 0;
  }
  int error = errno;
  if (hooks.after_fork_in_parent) hooks.after_fork_in_parent();
  fds.clear();
  (void)internal::send_message(control,
                               pid > 0 ? fmt::format("pid\n{}", pid)
                                       : fmt::format("error\nclone: {}", std::strerror(error)));
  return pid > 0 ? pid : -1;
}

// One fork request, answered; returns the worker in the child that was forked.
std::optional<ForkedWorker> serve_fork(int control, const std::string& request,
                                       std::vector<internal::UniqueFd>& fds,
                                       const std::vector<std::string>& args, pid_t parent,
                                       const TemplateHooks& hooks) {
  std::optional<internal::ForkRequest> fork = internal::parse_fork_request(request, fds);
  if (!fork) {
    (void)internal::send_message(control, "error\nthe request's descriptors do not match");
    return std::nullopt;
  }
  if (std::string taken = internal::taken_target(fork->targets, control); !taken.empty()) {
    (void)internal::send_message(control, "refused\n" + taken);  // this worker starts afresh
    return std::nullopt;
  }
  if (internal::thread_count() > 1) {
    (void)internal::send_message(control, "error\n" + internal::describe_threads());
    return std::nullopt;
  }
  if (fork_answering(control, fork->fds, hooks) != 0) return std::nullopt;
  return internal::become_worker(*fork, control, args, parent);  // the forked worker
}

// A "template" request: forks a successor of this template, which takes the descriptor sent as
// its control socket. True in the successor.
bool fork_successor(int control, std::vector<internal::UniqueFd>& fds, pid_t parent,
                    const TemplateHooks& hooks) {
  if (fds.size() != 1 || internal::thread_count() > 1) {
    (void)internal::send_message(control, "error\ncannot fork a successor here");
    return false;
  }
  if (fork_answering(control, fds, hooks) != 0) return false;
  {  // the successor: its control socket in place of this template's, everything else kept
    (void)::dup3(fds[0].get(), control, O_CLOEXEC);
    fds.clear();  // received above every number in use: not `control`
    (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    return true;
  }
}

// One template's life: prepares, then forks what it is asked to. Returns the worker in a forked
// worker, true in a forked successor (which then lives a life of its own), false at the end.
std::variant<bool, ForkedWorker> serve_one_template(const std::vector<std::string>& args,
                                                    pid_t parent, const TemplateHooks& hooks) {
  int control = internal::kTemplateFd;
  std::optional<std::string> prepare = internal::receive_message(control);
  if (!prepare) return false;
  std::vector<std::string> names = internal::split_lines(*prepare);
  names.erase(names.begin());
  std::vector<std::string> failed =
      hooks.prepare ? hooks.prepare(names) : std::vector<std::string>{};
  if (internal::thread_count() > 1) internal::run_fork_handlers(hooks);
  if (internal::thread_count() > 1) {
    (void)internal::send_message(control, "unsafe\n" + internal::describe_threads());
    return false;
  }
  if (std::string held = internal::held_reserved_fd(control); !held.empty()) {
    (void)internal::send_message(control, "unsafe\n" + held);
    return false;
  }
  if (!internal::send_message(control, internal::join_lines("ready", failed))) return false;
  for (;;) {
    std::vector<internal::UniqueFd> fds;
    std::optional<std::string> request = internal::receive_message(control, &fds);
    if (!request) return false;  // the parent is gone, or has no more use for this template
    if (*request == "template") {
      if (fork_successor(control, fds, parent, hooks)) return true;
    } else if (request->starts_with("fork")) {
      if (auto worker = serve_fork(control, *request, fds, args, parent, hooks)) return *worker;
    }
  }
}

}  // namespace

std::variant<int, ForkedWorker> serve_template(const std::vector<std::string>& args,
                                               const TemplateHooks& hooks) {
  if (args.size() < 2 || args[args.size() - 2] != internal::kTemplateFlag) return 2;
  if (args.back().starts_with(internal::kServiceArgument)) {
    return internal::serve_template_service(args, hooks);
  }
  pid_t parent = static_cast<pid_t>(std::atol(args.back().c_str()));
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) return 1;
  (void)::fcntl(internal::kTemplateFd, F_SETFD, FD_CLOEXEC);
  internal::reserve_worker_fds();  // before anything is imported
  for (;;) {
    std::variant<bool, ForkedWorker> served = serve_one_template(args, parent, hooks);
    if (auto* worker = std::get_if<ForkedWorker>(&served)) return std::move(*worker);
    if (!std::get<bool>(served)) return 0;
  }
}

}  // namespace kiln::pool
