// serve_nvrtc(): the server side of kiln's NVRTC compile server (nvrtc_server.h).
//
// One thread, so that fork() is safe: a poll loop accepts connections and forks a child for
// each; the child reads the request, compiles, answers on the connection and exits. The parent
// watches each connection for the client going away (its deadline passed, it was killed) and
// then kills the child, and answers for a child that died before it could.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/fd.h"
#include "internal/files.h"
#include "internal/server_directories.h"
#include "kiln/cache.h"
#include "kiln/ending.h"
#include "kiln/error.h"
#include "kiln/file_lock.h"
#include "kiln/settings.h"
#include "nvrtc_library.h"
#include "nvrtc_pch.h"
#include "nvrtc_server.h"

namespace kiln::cuda::internal {
namespace {

namespace fs = std::filesystem;
using kiln::internal::UniqueFd;
using Clock = std::chrono::steady_clock;

constexpr auto kTick = std::chrono::milliseconds(200);
// No compile (or PCH) takes this long but a hung one, whose client has no deadline.
constexpr auto kChildLimit = std::chrono::hours(1);
volatile std::sig_atomic_t stopping = 0;

void stop(int /*signal*/) { stopping = 1; }

// One compile in flight: the child's pid, the connection, and the pipe on which the child says
// it has started answering.
struct Active {
  UniqueFd connection;
  UniqueFd answering;
  Clock::time_point started;
  bool answered = false;  // the child took over the connection: it may go on making a PCH
};

nlohmann::json answer_of(const NvrtcAttempt& attempt) {
  return {{"result", attempt.result},
          {"failed_call", attempt.failed_call},
          {"bytes", nlohmann::json::binary(
                        std::vector<std::uint8_t>(attempt.bytes.begin(), attempt.bytes.end()))},
          {"log", without_diagnostics(attempt.log, is_pch_note)}};
}

// Tells the parent the answer is on its way (it no longer speaks for this child), then sends it;
// a client that does not take it within kAnswerWithin (stopped, say) is given up on.
bool send_answer(int connection, int answering, const nlohmann::json& answer) {
  char started = 'W';
  (void)!::write(answering, &started, 1);
  return write_frame(connection, answer, Clock::now() + kAnswerWithin);
}

// The request, read within kRequestWithin; then the client hears that its compile started.
// Ends the child when there is none (a silent client, a broken frame), and refuses one over
// kMaxRequest.
nlohmann::json read_request(int connection, int answering) {
  // The frame limit a little over kMaxRequest: the request's other fields (options, name).
  kiln::internal::FrameDecoder decoder(static_cast<std::uint32_t>(kMaxRequest + (1 << 20)));
  FrameRead read = read_frame(connection, decoder, Clock::now() + kRequestWithin, -1);
  if (read.too_large != 0) {
    std::string why =
        fmt::format("the request is {} bytes, over kiln's compile server's limit of {} MiB",
                    read.too_large, kMaxRequest >> 20);
    ::_exit(send_answer(connection, answering, {{"refused", why}}) ? 0 : 1);
  }
  if (!read.value || !read.value->is_object()) ::_exit(1);
  nlohmann::json started = {{"started", true}};
  if (!write_frame(connection, started, Clock::now() + kAnswerWithin)) ::_exit(1);
  return std::move(*read.value);
}

// Lowers this process's CPU priority to kPchNice and its I/O priority to the idle class; best
// effort: a refusal leaves them as they were.
void yield_to_compiles() {
  (void)::setpriority(PRIO_PROCESS, 0, kPchNice);
  constexpr int kWhoProcess = 1;  // IOPRIO_WHO_PROCESS, ioprio_set(2)
  constexpr int kIdle = 3 << 13;  // IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0)
  (void)::syscall(SYS_ioprio_set, kWhoProcess, 0, kIdle);
}

// The child's whole work: read the request, compile (with the PCH of its header prefix when
// there is one), answer; then, when there was none, make it for the compiles to come (after
// answering: the first compile of a header set is not made to wait for its PCH; at a lowered
// priority: the compiles that arrive meanwhile, which go without it, are not slowed).
[[noreturn]] void compile_one(int connection, int answering, const fs::path& pch_dir) {
  nlohmann::json request = read_request(connection, answering);
  if (::chdir(request["cwd"].get<std::string>().c_str()) != 0) {
    nlohmann::json refused = {{"refused", "cannot enter " + request["cwd"].get<std::string>()}};
    ::_exit(send_answer(connection, answering, refused) ? 0 : 1);
  }
  std::string source = request["source"].get<std::string>();
  auto options = request["options"].get<std::vector<std::string>>();
  size_t prefix = request["header_prefix"].get<size_t>();
  // None from an older client: then every file the prefix reads is checked (nvrtc_pch.h).
  auto toolkit = request.value("toolkit_dirs", std::vector<std::string>{});
  PchSpec spec = pch_spec(source, prefix, options, {toolkit.begin(), toolkit.end()});
  std::optional<OpenPch> pch = open_pch(pch_dir, spec);
  NvrtcAttempt attempt = attempt_with_pch(source, request["name"].get<std::string>(), options,
                                          request["cubin"].get<bool>(), pch);
  bool sent = send_answer(connection, answering, answer_of(attempt));
  ::close(connection);
  if (!spec.key.empty() && !pch) {
    yield_to_compiles();
    make_pch(pch_dir, spec);
  }
  ::_exit(sent ? 0 : 1);
}

// The parent's side of a child that ended: when it died before it started answering, the
// client hears how.
void reap(pid_t pid, int status, std::map<pid_t, Active>& active) {
  auto it = active.find(pid);
  if (it == active.end()) return;
  char started = 0;
  bool answered = it->second.answered || ::read(it->second.answering.get(), &started, 1) == 1;
  if (!answered) {
    Ending ending = WIFSIGNALED(status) ? Ending::signaled(WTERMSIG(status))
                                        : Ending::exited(WEXITSTATUS(status));
    (void)write_frame(it->second.connection.get(),
                      {{"died", ending.text()},
                       {"signaled", ending.kind == Ending::Kind::signaled},
                       {"value", ending.value}});
  }
  active.erase(it);
}

class Server {
 public:
  Server(fs::path socket, fs::path private_dir, UniqueFd listener)
      : socket_(std::move(socket)), dir_(std::move(private_dir)), listener_(std::move(listener)) {
    struct stat st {};
    if (::stat(socket_.c_str(), &st) == 0) inode_ = st.st_ino;
  }

  void run() {
    auto idle = std::chrono::seconds(idle_seconds());
    Clock::time_point last = Clock::now();
    while (stopping == 0 && still_ours()) {
      std::vector<pollfd> fds = {{listener_.get(), POLLIN, 0}};
      std::vector<pid_t> pids;  // the child of fds[2 i + 1] and fds[2 i + 2]
      for (const auto& [pid, a] : active_) {
        if (a.answered) continue;
        fds.push_back({a.connection.get(), POLLRDHUP, 0});
        fds.push_back({a.answering.get(), POLLIN, 0});
        pids.push_back(pid);
      }
      if (!room()) fds[0].events = 0;  // the backlog waits
      int n = ::poll(fds.data(), fds.size(), static_cast<int>(kTick.count()));
      for (size_t i = 0; n > 0 && i < pids.size(); ++i)
        watch(pids[i], fds[2 * i + 1], fds[2 * i + 2]);
      if (n > 0 && (fds[0].revents & POLLIN) != 0) accept_one();
      int status = 0;
      for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) reap(pid, status, active_);
      for (const auto& [pid, a] : active_) {
        if (Clock::now() - a.started > kChildLimit) ::kill(pid, SIGKILL);
      }
      if (!active_.empty() || n > 0) last = Clock::now();
      if (Clock::now() - last > idle) break;
    }
    shut_down();
  }

 private:
  // A child that started answering owns its connection; one whose client went away before is
  // killed (the client's deadline passed, or it was killed itself).
  void watch(pid_t pid, const pollfd& connection, const pollfd& answering) {
    Active& a = active_.at(pid);
    char started = 0;
    if ((answering.revents & POLLIN) != 0 && ::read(a.answering.get(), &started, 1) == 1) {
      a.answered = true;
      a.connection.reset();
      return;
    }
    if ((connection.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) ::kill(pid, SIGKILL);
  }

  static long idle_seconds() {
    auto limit = settings::seconds("KILN_SERVER_IDLE").value_or(std::chrono::seconds(600));
    return std::max<long>(1, std::chrono::duration_cast<std::chrono::seconds>(limit).count());
  }
  static size_t max_children() { return server_slots(); }
  // Whether another child may start: max_children() compile at once. A child that is answering
  // (or making a PCH after that) holds no slot, so that clients that do not take their answers
  // (stopped ones) cannot starve the others; all children together are held to twice that.
  bool room() const {
    size_t compiling = std::count_if(active_.begin(), active_.end(),
                                     [](const auto& child) { return !child.second.answered; });
    return compiling < max_children() && active_.size() < 2 * max_children();
  }
  // The socket on the path is still the one this server bound: removing it (or the cache
  // directory) ends the server.
  bool still_ours() const {
    struct stat st {};
    return ::stat(socket_.c_str(), &st) == 0 && st.st_ino == inode_;
  }

  void accept_one() {
    UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!connection) return;
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) return;
    UniqueFd read_end(pipe_fds[0]);
    UniqueFd write_end(pipe_fds[1]);
    pid_t pid = ::fork();
    if (pid == 0) {
      (void)::signal(SIGTERM, SIG_DFL);
      listener_.reset();
      for (auto& [other, a] : active_) {
        a.connection.reset();
        a.answering.reset();
      }
      compile_one(connection.get(), write_end.get(), dir_);
    }
    if (pid > 0) {
      active_[pid] = Active{std::move(connection), std::move(read_end), Clock::now()};
    }
  }

  void shut_down() {
    for (const auto& [pid, a] : active_) ::kill(pid, SIGKILL);
    for (const auto& [pid, a] : active_) ::waitpid(pid, nullptr, 0);
    active_.clear();
    if (still_ours()) ::unlink(socket_.c_str());
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  fs::path socket_;
  fs::path dir_;
  UniqueFd listener_;
  ino_t inode_ = 0;
  std::map<pid_t, Active> active_;
};

// Binds and listens on `socket` (mode 0600 through the umask); invalid on failure.
UniqueFd listen_on(const fs::path& socket) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
  ::unlink(socket.c_str());  // left by a server that was killed: the caller holds the start lock
  if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd.get(), 64) != 0) {
    return {};
  }
  return fd;
}

// The daemon: a session of its own, NVRTC loaded with its PCH heap in place, the socket bound;
// then `ready` hears one byte and the starter exits.
[[noreturn]] void daemon(const fs::path& socket, const fs::path& dir, int ready) {
  ::setsid();
  ::umask(077);
  (void)::chdir("/");  // each compile enters its client's directory; the server holds none
  // Held for the server's life (its children share it): a directory whose lock is free is
  // reaped (internal/server_directories.h), as the dead servers' are here.
  std::optional<FileLock> alive;
  try {
    alive = kiln::internal::claim_server_directory(dir, std::chrono::seconds(10));
    kiln::internal::reap_server_directories(dir.parent_path());
  } catch (const Error&) {
  }
  if (!alive) ::_exit(1);
  ::setenv("TMPDIR", dir.c_str(), 1);  // whatever NVRTC keeps in temporary files stays here
  try {
    const NvrtcLibrary& lib = nvrtc();
    // Allocated before any fork, so that every child has it at the same address.
    if (lib.set_pch_heap_size != nullptr) lib.set_pch_heap_size(std::size_t{1} << 30);
  } catch (const Error&) {
    ::_exit(1);
  }
  UniqueFd listener = listen_on(socket);
  if (!listener) ::_exit(1);
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd <= 2 && null_fd >= 0; ++fd) ::dup2(null_fd, fd);
  char byte = 'R';
  (void)!::write(ready, &byte, 1);
  ::close(ready);
  struct sigaction action {};
  action.sa_handler = stop;
  for (int signal : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(signal, &action, nullptr);
  (void)::signal(SIGPIPE, SIG_IGN);
  Server(socket, dir, std::move(listener)).run();
  ::_exit(0);
}

}  // namespace

size_t server_slots() { return std::max<size_t>(2, std::thread::hardware_concurrency()); }

void serve_nvrtc(const std::vector<std::string>& args) {
  if (args.size() != 2) ::_exit(2);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) ::_exit(1);
  pid_t pid = ::fork();
  if (pid < 0) ::_exit(1);
  if (pid == 0) {
    ::close(fds[0]);
    daemon(args[0], args[1], fds[1]);
  }
  ::close(fds[1]);
  char byte = 0;
  ::_exit(::read(fds[0], &byte, 1) == 1 ? 0 : 1);  // the daemon is listening, or gave up
}

}  // namespace kiln::cuda::internal
