// compile_in_server(): the client side of kiln's NVRTC compile server (nvrtc_server.h).
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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
#include "nvrtc_library.h"
#include "nvrtc_server.h"

namespace kiln::cuda::internal {
namespace {

namespace fs = std::filesystem;
using kiln::internal::UniqueFd;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kMaxFrame = std::uint32_t{1} << 30;
const bool registered = pool::register_service("nvrtc", serve_nvrtc);

bool flag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
}

// The server this process talks to: its socket, and its private directory.
struct Address {
  fs::path socket;
  fs::path private_dir;
  fs::path lock;
};

// The server's address, or std::nullopt (and why) when there can be none.
std::optional<Address> address(std::string* why) {
  try {
    fs::path dir = Cache::open({.enabled = true}).directory() / "servers";
    std::error_code ec;
    fs::create_directory(dir, ec);
    ::chmod(dir.c_str(), 0700);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
        (st.st_mode & 077) != 0) {
      *why = dir.string() + " is not a private directory of this user";
      return std::nullopt;
    }
    std::string self = fs::read_symlink("/proc/self/exe", ec).string();
    std::string id = cache_key({"kiln-nvrtc-server-1", file_identity(self),
                                file_identity(nvrtc().path), std::to_string(::geteuid())})
                         .substr(0, 16);
    Address a{dir / ("nvrtc-" + id + ".sock"), dir / ("nvrtc-" + id + ".d"),
              dir / ("nvrtc-" + id + ".lock")};
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

UniqueFd connect_to(const fs::path& socket) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return {};
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
  int r = kiln::internal::retry_eintr(
      [&] { return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr); });
  if (r != 0) return {};
  ucred peer{};
  socklen_t size = sizeof peer;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 ||
      peer.uid != ::geteuid()) {
    return {};  // not this user's server
  }
  return fd;
}

// Starts the server unless another process just did; then connects. Invalid when it would not
// start (`why` says why).
UniqueFd start_and_connect(const Address& a, std::string* why) {
  std::optional<FileLock> lock = FileLock::lock_for(a.lock, std::chrono::seconds(30));
  if (!lock) {
    *why = "another process holds " + a.lock.string() + " for 30 s";
    return {};
  }
  if (UniqueFd fd = connect_to(a.socket)) return fd;  // started meanwhile
  std::optional<std::vector<std::string>> command =
      pool::service_command("nvrtc", {a.socket.string(), a.private_dir.string()});
  if (!command) {
    *why =
        "this program cannot be re-executed as the server (it never called "
        "kiln::pool::serve_if_worker, and KILN_SERVICE_PROGRAM is not set)";
    return {};
  }
  RunResult started = run({.argv = std::move(*command), .timeout = std::chrono::seconds(30)});
  if (!started.ok()) {
    *why = fmt::format("the server did not start ({}): {}", started.status_text(), started.output);
    return {};
  }
  UniqueFd fd = connect_to(a.socket);
  if (!fd) *why = fmt::format("cannot connect to {}: {}", a.socket.string(), std::strerror(errno));
  return fd;
}

// One connection per compile. Invalid when no server can be used; the first reason is kept so
// that a process stops trying (KILN_SERVER_DEBUG=1 prints it).
UniqueFd connection() {
  static std::mutex mutex;
  static std::optional<std::string> unusable;
  static std::optional<Address> known;
  std::lock_guard lock(mutex);
  if (unusable) return {};
  std::string why;
  if (!known) known = address(&why);
  UniqueFd fd;
  if (known) {
    fd = connect_to(known->socket);
    if (!fd) fd = start_and_connect(*known, &why);
  }
  if (!fd) {
    unusable = why;
    if (flag("KILN_SERVER_DEBUG")) fmt::print(stderr, "kiln: no NVRTC compile server: {}\n", why);
  }
  return fd;
}

}  // namespace

bool write_frame(int fd, const std::string& cbor) {
  std::uint32_t size = static_cast<std::uint32_t>(cbor.size());
  unsigned char head[4] = {static_cast<unsigned char>(size), static_cast<unsigned char>(size >> 8),
                           static_cast<unsigned char>(size >> 16),
                           static_cast<unsigned char>(size >> 24)};
  std::string frame(reinterpret_cast<const char*>(head), 4);
  frame += cbor;
  size_t sent = 0;
  while (sent < frame.size()) {
    ssize_t n = kiln::internal::retry_eintr(
        [&] { return ::send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL); });
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

FrameRead read_frame(int fd, std::optional<Clock::time_point> deadline, int cancel_fd) {
  FrameRead result;
  std::string buffer;
  size_t wanted = 4;
  bool have_length = false;
  while (buffer.size() < wanted) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
    int ready = kiln::internal::poll_until(fds, cancel_fd >= 0 ? 2 : 1, deadline);
    if (ready == 0) {
      result.timed_out = true;
      return result;
    }
    if (ready < 0) return result;
    if (cancel_fd >= 0 && (fds[1].revents & POLLIN) != 0) {
      result.cancelled = true;
      return result;
    }
    char chunk[65536];
    size_t room = std::min(sizeof chunk, wanted - buffer.size());
    ssize_t n = kiln::internal::retry_eintr([&] { return ::read(fd, chunk, room); });
    if (n <= 0) return result;
    buffer.append(chunk, static_cast<size_t>(n));
    if (!have_length && buffer.size() == 4) {
      auto byte = [&](int i) { return std::uint32_t{static_cast<unsigned char>(buffer[i])}; };
      std::uint32_t size = byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24;
      if (size > kMaxFrame) return result;
      have_length = true;
      wanted = 4 + size;
      buffer.reserve(wanted);
    }
  }
  result.cbor = buffer.substr(4);
  return result;
}

std::optional<NvrtcAttempt> compile_in_server(const NvrtcJob& job) {
  (void)registered;
  if (flag("KILN_NO_SERVER")) return std::nullopt;
  UniqueFd fd = connection();
  if (!fd) return std::nullopt;
  std::error_code ec;
  nlohmann::json request = {{"source", job.source},
                            {"header_prefix", job.header_prefix},
                            {"name", job.name},
                            {"options", job.options},
                            {"cubin", job.cubin},
                            {"cwd", fs::current_path(ec).string()},
                            {"toolkit_dirs", job.toolkit_dirs}};
  std::vector<std::uint8_t> cbor = nlohmann::json::to_cbor(request);
  if (!write_frame(fd.get(), std::string(cbor.begin(), cbor.end()))) return std::nullopt;
  RunScope* scope = RunScope::current();
  FrameRead read = read_frame(fd.get(), scope ? scope->limits().deadline : std::nullopt,
                              scope ? scope->limits().cancel_fd : -1);
  if (read.timed_out) throw TimeoutError("NVRTC compile timed out (in kiln's compile server)");
  if (read.cancelled) throw Cancelled("NVRTC compile cancelled");
  if (!read.cbor) return std::nullopt;  // the server itself went away: compile here
  nlohmann::json answer = nlohmann::json::from_cbor(*read.cbor);
  if (answer.contains("died")) {
    throw ChildProcessError(fmt::format("NVRTC {} while compiling {} (in kiln's compile server)",
                                        answer["died"].get<std::string>(), job.name));
  }
  if (answer.contains("refused")) return std::nullopt;
  const auto& bytes = answer["bytes"].get_binary();
  return NvrtcAttempt{.result = answer["result"].get<int>(),
                      .failed_call = answer["failed_call"].get<std::string>(),
                      .bytes = std::string(bytes.begin(), bytes.end()),
                      .log = answer["log"].get<std::string>()};
}

}  // namespace kiln::cuda::internal
