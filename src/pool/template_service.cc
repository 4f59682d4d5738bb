// A template service's side (template_service.h): detached from the process that started it, it
// prepares once, then serves every caller of its user and scope from one thread (a process may
// only fork safely while it has one), with poll() over its socket, its callers, and each worker's
// pidfd, status socket and caller.
#include "template_service.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "internal/fd.h"
#include "kiln/settings.h"
#include "protocol.h"
#include "template_fork.h"
#include "template_freshness.h"
#include "template_messages.h"
#include "template_scope.h"

namespace kiln::internal {
namespace {

// How often a service that forks workers looks at its files again (each hello looks at once).
constexpr std::chrono::seconds kRecheck{1};

using ServiceClock = std::chrono::steady_clock;

int pidfd_of(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// A worker this service forked, until it is reaped.
struct ServedWorker {
  pid_t pid = -1;
  UniqueFd pidfd;   // polls readable once it has exited
  UniqueFd status;  // the caller's Child holds the other end
  UniqueFd caller;  // the caller's pidfd: the worker dies with it
  bool exited = false;
  bool released = false;  // the caller has its status, or is gone: reap once it exits
};

struct Caller {
  UniqueFd socket;
};

// The wait status, as waitpid() gives it, of an exited child that waitid() saw.
int wait_status_of(const siginfo_t& info) {
  if (info.si_code == CLD_EXITED) return (info.si_status & 0xff) << 8;
  return (info.si_status & 0x7f) | (info.si_code == CLD_DUMPED ? 0x80 : 0);
}

pid_t fork_with(const pool::TemplateHooks& hooks, bool sibling) {
  if (hooks.before_fork) hooks.before_fork();
  pid_t pid = sibling ? clone_as_sibling() : ::fork();
  int error = errno;
  if (pid == 0) {
    if (hooks.after_fork_in_child) hooks.after_fork_in_child();
    return 0;
  }
  if (hooks.after_fork_in_parent) hooks.after_fork_in_parent();
  errno = error;
  return pid;
}

class Service {
 public:
  // What run() ends with: an exit status, a forked worker, or the control socket of a forked
  // successor (which then serves as a service of its own).
  using Ending = std::variant<int, pool::ForkedWorker, UniqueFd>;

  Service(std::string digest, std::filesystem::path socket, const std::vector<std::string>& args,
          const pool::TemplateHooks& hooks)
      : digest_(std::move(digest)), socket_(std::move(socket)), args_(args), hooks_(hooks) {}

  // The first service of a key prepares under the lock (template_scope.h, hold_preparing_lock).
  void hold(UniqueFd preparing) { preparing_ = std::move(preparing); }

  Ending run(UniqueFd control) {
    if (!prepare(control)) return 0;
    callers_.push_back({std::move(control)});
    idle_since_ = ServiceClock::now();
    for (;;) {
      if (std::optional<Ending> ending = serve_once()) return std::move(*ending);
    }
  }

 private:
  bool prepare(const UniqueFd& control) {
    std::optional<std::string> prepare = receive_message(control.get());
    if (!prepare) return false;
    std::vector<std::string> names = split_lines(*prepare);
    names.erase(names.begin());
    std::vector<std::string> failed =
        hooks_.prepare ? hooks_.prepare(names) : std::vector<std::string>{};
    if (thread_count() > 1) run_fork_handlers(hooks_);
    std::string unsafe = thread_count() > 1 ? describe_threads() : held_reserved_fd(-1);
    if (!unsafe.empty()) {
      (void)send_message(control.get(), "unsafe\n" + unsafe);
      return false;
    }
    for (const std::string& name : names) {
      if (std::find(failed.begin(), failed.end(), name) == failed.end()) names_.push_back(name);
    }
    failed_ = failed;
    freshness_ = Freshness::record(hooks_.sources ? hooks_.sources() : std::vector<std::string>{});
    checked_at_ = ServiceClock::now();
    listen_on_socket();
    release_preparing_lock();
    // Serves later processes even when the one that started it is gone by now.
    (void)send_message(control.get(), join_lines("ready", failed));
    return listener_ || send_message(control.get(), "");
  }

  // Binds a socket beside the service's path and renames it there: a service that was there
  // (one with fewer names, or a stale one) hands the path over and ends with its callers.
  void listen_on_socket() {
    UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    std::string temporary = fmt::format("{}.{}", socket_.string(), ::getpid());
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (!fd || temporary.size() >= sizeof address.sun_path) return;  // serves its first caller
    std::memcpy(address.sun_path, temporary.c_str(), temporary.size());
    (void)::unlink(temporary.c_str());
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(fd.get(), 64) != 0 || ::rename(temporary.c_str(), socket_.c_str()) != 0) {
      (void)::unlink(temporary.c_str());
      return;
    }
    struct stat st {};
    if (::stat(socket_.c_str(), &st) == 0) socket_inode_ = st.st_ino;
    listener_ = std::move(fd);
  }

  // A later process that wants one made ahead finds this one's socket from now on.
  void release_preparing_lock() {
    if (!preparing_) return;
    std::filesystem::path path = socket_;
    path.replace_extension(".preparing");
    (void)::unlink(path.c_str());
    preparing_.reset();
  }

  bool owns_socket() const {
    struct stat st {};
    return listener_ && ::stat(socket_.c_str(), &st) == 0 && st.st_ino == socket_inode_;
  }

  // Takes no more callers: its path goes, unless another service has it already.
  void expire() {
    if (owns_socket()) (void)::unlink(socket_.c_str());
    listener_.reset();
  }

  std::chrono::milliseconds idle_limit() const {
    static const std::chrono::milliseconds limit =
        settings::seconds("KILN_POOL_TEMPLATE_IDLE").value_or(std::chrono::minutes(15));
    return limit;
  }

  std::optional<Ending> serve_once() {
    if (callers_.empty() && workers_.empty()) {
      bool idle = ServiceClock::now() - idle_since_ >= idle_limit();
      if (idle || !owns_socket()) {
        expire();
        return Ending(0);
      }
    }
    std::vector<pollfd> fds;
    if (listener_) fds.push_back({listener_.get(), POLLIN, 0});
    for (const Caller& caller : callers_) fds.push_back({caller.socket.get(), POLLIN, 0});
    for (const ServedWorker& worker : workers_) {
      fds.push_back({worker.exited ? -1 : worker.pidfd.get(), POLLIN, 0});
      fds.push_back({worker.status ? worker.status.get() : -1, POLLIN, 0});
      fds.push_back({worker.caller ? worker.caller.get() : -1, POLLIN, 0});
    }
    int timeout = static_cast<int>(std::min<std::int64_t>(idle_limit().count(), 60'000));
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) return Ending(1);
    std::size_t next = 0;
    if (listener_ && (fds[next++].revents & POLLIN) != 0) accept_caller();
    std::size_t first_worker = next + callers_.size();
    watch_workers(fds, first_worker);
    for (std::size_t i = 0; i < callers_.size(); ++i) {
      if (fds[next + i].revents == 0) continue;
      if (std::optional<Ending> ending = answer(i)) return ending;
    }
    std::erase_if(callers_, [](const Caller& caller) { return !caller.socket; });
    if (callers_.empty() && workers_.empty()) idle_since_ = ServiceClock::now();
    return std::nullopt;
  }

  void accept_caller() {
    UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd) return;
    ucred peer{};
    socklen_t size = sizeof peer;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 ||
        peer.uid != ::geteuid()) {
      return;  // another user: closed without a word
    }
    if (scope_of(peer.pid) != scope_of(::getpid())) {
      (void)send_message(fd.get(), "refused\nthe caller runs in another cgroup or namespace");
      return;
    }
    callers_.push_back({std::move(fd)});
  }

  void watch_workers(const std::vector<pollfd>& fds, std::size_t first) {
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      ServedWorker& worker = workers_[i];
      const pollfd* polled = &fds[first + 3 * i];
      if (!worker.exited && polled[0].revents != 0) report_exit(worker);
      if (worker.status && polled[1].revents != 0) {  // the caller has its status, or is gone
        worker.status.reset();
        worker.released = true;
      }
      if (worker.caller && polled[2].revents != 0) {  // the caller died
        worker.caller.reset();
        worker.released = true;
      }
      if (worker.released && !worker.exited) (void)::kill(-worker.pid, SIGKILL);
      if (worker.released && worker.exited) {
        (void)::kill(-worker.pid, SIGKILL);  // what it left in its group
        (void)retry_eintr([&] { return ::waitpid(worker.pid, nullptr, WNOHANG); });
        worker.pid = -1;
      }
    }
    std::erase_if(workers_, [](const ServedWorker& worker) { return worker.pid < 0; });
  }

  static void report_exit(ServedWorker& worker) {
    siginfo_t info{};
    int r = retry_eintr(
        [&] { return ::waitid(P_PID, worker.pid, &info, WEXITED | WNOHANG | WNOWAIT); });
    if (r != 0 || info.si_pid != worker.pid) return;
    worker.exited = true;
    if (worker.status) {
      std::string text = fmt::format("exit {}", wait_status_of(info));
      (void)::send(worker.status.get(), text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
  }

  // Reads and answers one message of caller `i`; an ending in a forked child.
  std::optional<Ending> answer(std::size_t i) {
    std::vector<UniqueFd> fds;
    int socket = callers_[i].socket.get();
    std::optional<std::string> request = receive_message(socket, &fds);
    if (!request) {
      callers_[i].socket.reset();
      return std::nullopt;
    }
    idle_since_ = ServiceClock::now();
    if (request->starts_with("hello\n")) {
      hello(socket, request->substr(6));
    } else if (request->starts_with("fork")) {
      return fork_worker(socket, *request, fds);
    } else if (*request == "template") {
      return fork_successor(socket, fds);
    } else if (*request == "stop") {
      expire();
    } else if (*request == "status") {
      (void)send_message(socket, status());
    }
    return std::nullopt;
  }

  // Why this service must not serve another worker: a file it imported changed ("" when none).
  std::string stale(bool now) {
    if (!now && ServiceClock::now() - checked_at_ < kRecheck) return {};
    checked_at_ = ServiceClock::now();
    std::string why = freshness_.stale_reason();
    if (!why.empty()) expire();  // the old one expires; the caller starts a fresh one
    return why;
  }

  void hello(int socket, const std::string& digest) {
    if (digest != digest_) {
      (void)send_message(socket, "refused\nthis service serves another template key");
    } else if (!listener_) {
      (void)send_message(socket, "stale\nthe service is ending");
    } else if (std::string why = stale(true); !why.empty()) {
      (void)send_message(socket, "stale\n" + why);
    } else {
      (void)send_message(socket, join_lines(join_lines("welcome", names_) + "\n", failed_));
    }
  }

  std::string status() const {
    return fmt::format("status\npid {}\ncallers {}\nworkers {}\nfiles {}\nnames {}", ::getpid(),
                       callers_.size(), workers_.size(), freshness_.files(), names_.size());
  }

  std::optional<Ending> fork_worker(int socket, const std::string& request,
                                    std::vector<UniqueFd>& fds) {
    std::optional<ForkRequest> fork = parse_fork_request(request, fds);
    std::string why;
    if (!fork) {
      why = "error\nthe request's descriptors do not match";
    } else if (std::string taken = taken_target(fork->targets, -1); !taken.empty()) {
      why = "refused\n" + taken;
    } else if (thread_count() > 1) {
      why = "error\n" + describe_threads();
    } else if (std::string changed = stale(false); !changed.empty()) {
      why = "stale\n" + changed;
    }
    int pair[2];
    if (why.empty() && ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
      why = fmt::format("error\nsocketpair: {}", std::strerror(errno));
    }
    if (!why.empty()) {
      (void)send_message(socket, why);
      return std::nullopt;
    }
    UniqueFd ours(pair[0]);
    UniqueFd theirs(pair[1]);
    ucred peer{};
    socklen_t size = sizeof peer;
    (void)::getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &peer, &size);
    pid_t self = ::getpid();
    pid_t pid = fork_with(hooks_, false);
    if (pid == 0) return become(*fork, self);
    if (pid < 0) {
      (void)send_message(socket, fmt::format("error\nfork: {}", std::strerror(errno)));
      return std::nullopt;
    }
    (void)send_message(socket, fmt::format("pid\n{}", pid), {theirs.get()});
    workers_.push_back(
        {pid, UniqueFd(pidfd_of(pid)), std::move(ours), UniqueFd(pidfd_of(peer.pid))});
    return std::nullopt;
  }

  // The forked worker: nothing of the service's stays open in it.
  Ending become(ForkRequest& fork, pid_t service) {
    (void)::setpgid(0, 0);
    (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != service) ::_exit(1);
    close_all();
    return become_worker(fork, -1, args_, service);
  }

  std::optional<Ending> fork_successor(int socket, std::vector<UniqueFd>& fds) {
    if (fds.size() != 1 || thread_count() > 1) {
      (void)send_message(socket, "error\ncannot fork a successor here");
      return std::nullopt;
    }
    pid_t pid = fork_with(hooks_, true);
    if (pid == 0) {
      UniqueFd control = std::move(fds[0]);
      close_all();
      return Ending(std::move(control));
    }
    fds.clear();
    (void)send_message(socket, pid > 0 ? fmt::format("pid\n{}", pid)
                                       : fmt::format("error\nclone: {}", std::strerror(errno)));
    return std::nullopt;
  }

  void close_all() {
    listener_.reset();
    callers_.clear();
    for (ServedWorker& worker : workers_) {
      worker.pidfd.reset();
      worker.status.reset();
      worker.caller.reset();
    }
    workers_.clear();
  }

  const std::string digest_;
  const std::filesystem::path socket_;
  const std::vector<std::string>& args_;
  const pool::TemplateHooks& hooks_;
  std::vector<std::string> names_;
  std::vector<std::string> failed_;
  Freshness freshness_;
  ServiceClock::time_point checked_at_{};
  ServiceClock::time_point idle_since_{};
  UniqueFd listener_;
  UniqueFd preparing_;
  ino_t socket_inode_ = 0;
  std::vector<Caller> callers_;
  std::vector<ServedWorker> workers_;
};

// A service holds none of its starter's stdio (a caller reading its child's output to the end
// would wait for the service too): stdin and stdout become /dev/null, stderr a log beside the
// socket, <digest>.log, for what its imports print. Each worker gets its caller's own.
void detach_stdio(const std::filesystem::path& socket) {
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  std::filesystem::path log = socket;
  log.replace_extension(".log");
  UniqueFd err(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (null) {
    (void)::dup2(null.get(), 0);
    (void)::dup2(null.get(), 1);
  }
  if (err || null) (void)::dup2(err ? err.get() : null.get(), 2);
}

}  // namespace

std::variant<int, pool::ForkedWorker> serve_template_service(const std::vector<std::string>& args,
                                                             const pool::TemplateHooks& hooks) {
  std::string_view spec = std::string_view(args.back()).substr(kServiceArgument.size());
  std::size_t colon = spec.find(':');
  if (colon == std::string_view::npos) return 2;
  std::string digest(spec.substr(0, colon));
  std::filesystem::path socket(spec.substr(colon + 1));
  // Detached: the process its caller started exits at once (and is reaped); the service, its
  // child, lives on in a session of its own, a child of init (or of the nearest subreaper).
  pid_t pid = fork_with(hooks, false);
  if (pid != 0) ::_exit(pid > 0 ? 0 : 1);
  (void)::setsid();
  detach_stdio(socket);
  UniqueFd control(::fcntl(kTemplateFd, F_DUPFD_CLOEXEC, 10));
  ::close(kTemplateFd);
  reserve_worker_fds();  // before anything is imported
  reserve_fd(kTemplateFd);
  UniqueFd preparing = hold_preparing_lock(socket);
  for (;;) {
    Service service(digest, socket, args, hooks);
    service.hold(std::exchange(preparing, UniqueFd()));  // the first one only
    Service::Ending ending = service.run(std::move(control));
    if (auto* successor = std::get_if<UniqueFd>(&ending)) {
      control = std::move(*successor);
      continue;
    }
    if (auto* worker = std::get_if<pool::ForkedWorker>(&ending)) return std::move(*worker);
    std::filesystem::path log = socket;
    log.replace_extension(".log");
    struct stat st {};
    if (::stat(log.c_str(), &st) == 0 && st.st_size == 0) (void)::unlink(log.c_str());
    return std::get<int>(ending);
  }
}

}  // namespace kiln::internal
