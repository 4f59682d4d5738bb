// compile_in_server(): the client side of kiln's NVRTC compile server (nvrtc_server.h).
//
// Every way the server can fail the client ends in a compile in the calling process, within a
// bound: no server can be started (latched for the process), a start that failed lately (the
// servers directory remembers it), a server that does not start the compile within
// kStartedWithin (the process then passes it by for kPassBy), or one that goes away.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/fd.h"
#include "internal/files.h"
#include "kiln/cache.h"
#include "kiln/error.h"
#include "kiln/file_lock.h"
#include "kiln/pool.h"
#include "kiln/process.h"
#include "kiln/settings.h"
#include "nvrtc_library.h"
#include "nvrtc_server.h"

namespace kiln::cuda::internal {
namespace {

namespace fs = std::filesystem;
using kiln::internal::UniqueFd;
using Clock = std::chrono::steady_clock;
using Deadline = std::optional<Clock::time_point>;

// How long a process compiles in process after a server did not start its compile in time.
constexpr auto kPassBy = std::chrono::seconds(30);
const bool registered = pool::register_service("nvrtc", serve_nvrtc);

void debug(const std::string& why) {
  if (settings::flag("KILN_SERVER_DEBUG"))
    fmt::print(stderr, "kiln: no NVRTC compile server: {}\n", why);
}

Deadline sooner(Deadline a, Deadline b) {
  if (!a || !b) return a ? a : b;
  return std::min(*a, *b);
}

// The server this process talks to: its socket, private directory, start lock, and the record
// of a start that failed.
struct Address {
  fs::path socket;
  fs::path private_dir;
  fs::path lock;
  fs::path failed;
};

// What identifies the program that would be started as the server: its file's device, inode,
// size and modification time (through links such as /proc/self/exe), so that another kiln (a
// rebuild, an upgrade, another venv's) gets a server of its own. std::nullopt (and why) when it
// is no executable file.
std::optional<std::string> program_identity(const std::string& program, std::string* why) {
  std::optional<std::string> named = settings::text("KILN_SERVICE_PROGRAM");
  std::string what = named && program == *named
                         ? fmt::format("KILN_SERVICE_PROGRAM names {}", program)
                         : fmt::format("the server's program {}", program);
  struct stat st {};
  if (::stat(program.c_str(), &st) != 0) {
    *why = fmt::format("{}: {}", what, std::strerror(errno));
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode) || ::access(program.c_str(), X_OK) != 0) {
    *why = what + ", which is not an executable file";
    return std::nullopt;
  }
  return fmt::format("{}:{}:{}:{}.{}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
}

// The servers directory: <cache directory>/servers, 0700 and this user's. Tightened when it
// exists: it is kiln's own, since Cache::open uses only a directory that is kiln's (one of the
// user's is refused, internal/cache_tag.h), never one whose mode is someone's choice.
std::optional<fs::path> servers_dir(std::string* why) {
  fs::path dir = Cache::open({.enabled = true}).directory() / "servers";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno == EEXIST) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);  // not a link
    if (fd >= 0) {
      (void)::fchmod(fd, 0700);
      ::close(fd);
    }
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0) {
    *why = dir.string() + " is not a private directory of this user";
    return std::nullopt;
  }
  return dir;
}

// The server's address, or std::nullopt (and why) when there can be none. Its id covers the
// protocol, the program started as the server, the NVRTC library and the user.
std::optional<Address> address(std::string* why) {
  try {
    std::optional<std::vector<std::string>> command = pool::service_command("nvrtc", {});
    if (!command) {
      *why =
          "this program cannot be re-executed as the server (it never called "
          "kiln::pool::serve_if_worker, and KILN_SERVICE_PROGRAM is not set)";
      return std::nullopt;
    }
    std::optional<std::string> program = program_identity(command->front(), why);
    if (!program) return std::nullopt;
    std::optional<fs::path> dir = servers_dir(why);
    if (!dir) return std::nullopt;
    std::string id = cache_key({"kiln-nvrtc-server", std::to_string(kProtocol), *program,
                                file_stamp(nvrtc().path), std::to_string(::geteuid())})
                         .substr(0, 16);
    fs::path base = *dir / ("nvrtc-" + id);
    Address a{base.string() + ".sock", base.string() + ".d", base.string() + ".lock",
              base.string() + ".failed"};
    if (a.socket.string().size() >= sizeof(sockaddr_un::sun_path)) {
      *why = "the socket path is too long for a Unix socket: " + a.socket.string();
      return std::nullopt;
    }
    return a;
  } catch (const Error& e) {
    *why = e.what();
    return std::nullopt;
  }
}

// A connection to the server on `socket`, waiting for room in its backlog until `deadline`.
// Invalid when there is none, with `error` saying why: ENOENT or ECONNREFUSED when no server
// listens there, EAGAIN when its backlog stayed full (busy, or stopped), EPERM when another user
// listens there.
UniqueFd connect_to(const fs::path& socket, Clock::time_point deadline, int* error) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  *error = errno;
  if (!fd) return {};
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
  timeval limit{.tv_sec = std::max<long>(0, left.count() / 1000000),
                .tv_usec = std::max<long>(1, left.count() % 1000000)};
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);  // bounds connect
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
  int r = kiln::internal::retry_eintr(
      [&] { return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr); });
  *error = errno;
  if (r != 0) return {};
  ucred peer{};
  socklen_t size = sizeof peer;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 ||
      peer.uid != ::geteuid()) {
    *error = EPERM;
    return {};  // not this user's server
  }
  return fd;
}

bool nobody_listens(int error) { return error == ENOENT || error == ECONNREFUSED; }

// Why a start of the server failed less than kFailedStartMemory ago, if one did.
std::optional<std::string> failed_lately(const Address& a) {
  struct stat st {};
  if (::stat(a.failed.c_str(), &st) != 0) return std::nullopt;
  auto age =
      std::chrono::system_clock::now() - std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec);
  if (age > kFailedStartMemory) return std::nullopt;
  std::string said;
  try {
    said = kiln::internal::read_file(a.failed);
  } catch (const Error&) {
  }
  return fmt::format("a start of the server failed less than {} s ago ({}): {}",
                     kFailedStartMemory.count(), a.failed.string(), said);
}

// Runs the server's starter within kServerStartWithin; why it failed, or std::nullopt.
std::optional<std::string> start(const Address& a) {
  std::optional<std::vector<std::string>> command =
      pool::service_command("nvrtc", {a.socket.string(), a.private_dir.string()});
  if (!command) return "this program cannot be re-executed as the server";
  // A run of its own, not one of the caller's (kiln build's job would list it as one of its
  // commands): limited by kServerStartWithin, not the caller's deadline; still cancelled with it.
  const RunScope* caller = RunScope::current();
  RunScope own({.cancel_fd = caller != nullptr ? caller->limits().cancel_fd : -1});
  try {
    RunResult started = run({.argv = std::move(*command), .timeout = kServerStartWithin});
    if (started.ok()) return std::nullopt;
    return fmt::format("the server did not start ({}): {}", started.status_text(), started.output);
  } catch (const Error& e) {
    return fmt::format("the server could not be started: {}", e.what());
  }
}

// Starts the server unless another process just did, or a start failed lately; then connects.
// Invalid when it would not start (`why` says why) or another server is busy (`error` EAGAIN).
UniqueFd start_and_connect(const Address& a, std::string* why, int* error) {
  std::optional<FileLock> lock =
      FileLock::lock_for(a.lock, kServerStartWithin + std::chrono::seconds(5));
  if (!lock) {
    *why = "another process holds " + a.lock.string() + " for longer than a start takes";
    return {};
  }
  UniqueFd fd = connect_to(a.socket, Clock::now() + kStartedWithin, error);
  if (fd || !nobody_listens(*error)) {  // started meanwhile, or one that must not be replaced
    if (!fd)
      *why = fmt::format("cannot connect to {}: {}", a.socket.string(), std::strerror(*error));
    return fd;
  }
  if (std::optional<std::string> failed = failed_lately(a)) {
    *why = *failed;
    return {};
  }
  if (std::optional<std::string> failed = start(a)) {
    *why = *failed;
    try {  // other processes compile in process at once for a while, rather than wait too
      kiln::internal::write_file_atomically(a.failed, *failed);
    } catch (const Error&) {
    }
    return {};
  }
  std::error_code ec;
  fs::remove(a.failed, ec);
  fd = connect_to(a.socket, Clock::now() + kStartedWithin, error);
  if (!fd) *why = fmt::format("cannot connect to {}: {}", a.socket.string(), std::strerror(*error));
  return fd;
}

// The variables that decide where kiln's cache directory, and so the server's address, is.
std::string cache_location() {
  std::string location;
  location += settings::text("KILN_CACHE_DIR").value_or("") + std::string(1, '\0');
  for (const char* name : {"XDG_CACHE_HOME", "HOME"}) {
    location += kiln::internal::env(name).value_or("") + std::string(1, '\0');
  }
  return location;
}

// What this process knows about its server, for the cache directory `location` names.
struct Client {
  std::mutex mutex;
  std::string location;                 // cache_location() when `known` was found
  std::optional<std::string> unusable;  // why none can be used: the process stops trying
  std::optional<Address> known;
  Clock::time_point pass_by_until{};  // a server did not start a compile in time: until then
};

Client& client() {
  static Client* c = new Client;  // NOLINT(cppcoreguidelines-owning-memory): never destroyed
  return *c;
}

// One connection per compile. Invalid when no server can be used (KILN_SERVER_DEBUG=1 says
// why): the first reason is kept so that a process stops trying.
UniqueFd connection() {
  Client& c = client();
  std::lock_guard lock(c.mutex);
  if (std::string location = cache_location(); location != c.location) {
    c.location = std::move(location);  // another cache directory: another server
    c.unusable.reset();
    c.known.reset();
    c.pass_by_until = {};
  }
  if (c.unusable || Clock::now() < c.pass_by_until) return {};
  std::string why;
  if (!c.known) c.known = address(&why);
  UniqueFd fd;
  int error = 0;
  if (c.known) {
    fd = connect_to(c.known->socket, Clock::now() + kStartedWithin, &error);
    try {
      if (!fd && nobody_listens(error)) fd = start_and_connect(*c.known, &why, &error);
    } catch (const Error& e) {  // its directory went away (removed while this process ran)
      why = e.what();
    }
    if (!fd && error == EAGAIN) {  // its backlog stayed full: busy, or stopped
      c.pass_by_until = Clock::now() + kPassBy;
      debug(fmt::format("{} accepted no connection within {} s", c.known->socket.string(),
                        kStartedWithin.count()));
      return {};
    }
    if (!fd && why.empty()) {
      why = fmt::format("cannot connect to {}: {}", c.known->socket.string(), std::strerror(error));
    }
  }
  if (!fd) {
    c.unusable = why;
    debug(why);
  }
  return fd;
}

// The server did not start the compile in time: this process passes it by for a while.
void pass_by(const std::string& why) {
  Client& c = client();
  std::lock_guard lock(c.mutex);
  c.pass_by_until = Clock::now() + kPassBy;
  debug(why);
}

nlohmann::json request_of(const NvrtcJob& job) {
  std::error_code ec;
  return {{"source", job.source},
          {"header_prefix", job.header_prefix},
          {"name", job.name},
          {"options", job.options},
          {"cubin", job.cubin},
          {"cwd", fs::current_path(ec).string()},
          {"toolkit_dirs", job.toolkit_dirs}};
}

// The request's size as the server will count it: its source, which is nearly all of it.
size_t request_size(const NvrtcJob& job) {
  size_t size = job.source.size() + job.name.size();
  for (const std::string& option : job.options) size += option.size();
  return size;
}

// The caller's deadline passed `where` ("in kiln's compile server"): said with the limit it was,
// as the RunScope names it.
[[noreturn]] void timed_out(std::string_view where) {
  const RunScope* scope = RunScope::current();
  throw TimeoutError(
      fmt::format("NVRTC compile timed out ({}; {})", where,
                  scope != nullptr ? scope->limits().deadline_words() : "the caller's deadline"));
}

// The next frame as JSON; std::nullopt (compile here) when the server went away or sent garbage.
// Throws when the caller's deadline passed or it was cancelled.
std::optional<nlohmann::json> next_answer(int fd, kiln::internal::FrameDecoder& decoder,
                                          Deadline deadline, int cancel_fd) {
  FrameRead read = read_frame(fd, decoder, deadline, cancel_fd);
  if (read.timed_out) timed_out("in kiln's compile server");
  if (read.cancelled) throw Cancelled("NVRTC compile cancelled");
  if (!read.value || !read.value->is_object()) return std::nullopt;
  return std::move(read.value);
}

// Sends the request and waits for a child to start on it, until kStartedWithin from now or the
// caller's deadline. False (compile here) when the server went away or was too slow.
bool started(int fd, kiln::internal::FrameDecoder& decoder, const nlohmann::json& request,
             Deadline callers, int cancel_fd) {
  Clock::time_point by = Clock::now() + kStartedWithin;
  Deadline deadline = sooner(callers, by);
  bool sent = write_frame(fd, request, deadline);
  std::optional<nlohmann::json> first;
  try {
    if (sent) first = next_answer(fd, decoder, deadline, cancel_fd);
  } catch (const TimeoutError&) {
    sent = false;
  }
  if (callers && Clock::now() >= *callers) {
    timed_out("waiting for kiln's compile server");
  }
  if (!sent && Clock::now() >= by) {
    pass_by(fmt::format("it did not start a compile within {} s", kStartedWithin.count()));
  }
  if (first && first->contains("refused")) debug(first->value("refused", std::string()));
  return first && first->contains("started");
}

}  // namespace

std::optional<NvrtcAttempt> compile_in_server(const NvrtcJob& job) {
  (void)registered;
  if (settings::flag("KILN_NO_SERVER")) return std::nullopt;
  if (size_t size = request_size(job); size > kMaxRequest) {
    debug(fmt::format("the request is {} bytes, over the limit of {} MiB: compiling here", size,
                      kMaxRequest >> 20));
    return std::nullopt;
  }
  nlohmann::json request = request_of(job);
  UniqueFd fd = connection();
  if (!fd) return std::nullopt;
  RunScope* scope = RunScope::current();
  Deadline deadline = scope ? scope->limits().deadline : std::nullopt;
  int cancel_fd = scope ? scope->limits().cancel_fd : -1;
  kiln::internal::FrameDecoder decoder;  // the connection's: a read may take two frames' bytes
  if (!started(fd.get(), decoder, request, deadline, cancel_fd)) return std::nullopt;
  std::optional<nlohmann::json> answer = next_answer(fd.get(), decoder, deadline, cancel_fd);
  if (!answer) return std::nullopt;  // the server itself went away: compile here
  if (answer->contains("died")) {
    std::optional<Ending> ending;
    if (answer->contains("value")) {
      int value = answer->value("value", 0);
      ending = answer->value("signaled", false) ? Ending::signaled(value) : Ending::exited(value);
    }
    throw ChildProcessError(fmt::format("NVRTC {} while compiling {} (in kiln's compile server)",
                                        (*answer)["died"].get<std::string>(), job.name),
                            ending);
  }
  if (!answer->contains("bytes")) return std::nullopt;  // refused
  const auto& bytes = (*answer)["bytes"].get_binary();
  return NvrtcAttempt{.result = (*answer)["result"].get<int>(),
                      .failed_call = (*answer)["failed_call"].get<std::string>(),
                      .bytes = std::string(bytes.begin(), bytes.end()),
                      .log = (*answer)["log"].get<std::string>()};
}

}  // namespace kiln::cuda::internal
