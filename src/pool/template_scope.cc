// Where template services live and whom they serve (template_scope.h).
#include "template_scope.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "internal/fd.h"
#include "internal/files.h"
#include "internal/sha256.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "template_messages.h"

namespace kiln::internal {
namespace {

constexpr const char* kNamespaces[] = {"cgroup", "ipc", "mnt", "net", "pid", "user", "uts"};
// How long a listing waits for each service's answer.
constexpr std::chrono::milliseconds kAnswer{2000};

// Makes `dir` (0700) when missing; SystemError unless it is a directory of this user's alone.
void private_directory(const std::filesystem::path& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw SystemError(fmt::format("cannot make the template directory {}", dir.string()), errno);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    throw SystemError(fmt::format("cannot examine {}", dir.string()), errno);
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    throw SystemError(
        fmt::format("{} is not a directory of this user's alone (mode {:o}, uid {}): kiln "
                    "starts no worker template service there",
                    dir.string(), st.st_mode & 07777, st.st_uid),
        EPERM);
  }
}

std::filesystem::path base_directory() {
  std::optional<std::string> runtime = env("XDG_RUNTIME_DIR");
  struct stat st {};
  if (runtime && !runtime->empty() && ::stat(runtime->c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
      st.st_uid == ::geteuid()) {
    std::filesystem::path dir = std::filesystem::path(*runtime) / "kiln";
    private_directory(dir);
    return dir;
  }
  std::filesystem::path dir = fmt::format("/tmp/kiln-{}", ::geteuid());
  private_directory(dir);
  return dir;
}

// Connects to `socket` and asks `request`; the answer, or why none came.
std::string ask(const std::filesystem::path& socket, const std::string& request, bool answered) {
  std::string why;
  UniqueFd fd = connect_to_service(socket, why);
  if (!fd) return why;
  if (!send_message(fd.get(), request)) return "it hung up";
  if (!answered) return "told to stop";
  if (!wait_readable(fd.get(), kAnswer)) return "no answer";
  return receive_message(fd.get()).value_or("it hung up");
}

}  // namespace

UniqueFd connect_to_service(const std::filesystem::path& socket, std::string& why) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string path = socket.string();
  if (!fd || path.size() >= sizeof address.sun_path) {
    why = fmt::format("cannot connect to {}", path);
    return {};
  }
  std::memcpy(address.sun_path, path.c_str(), path.size());
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    int error = errno;
    if (error == ECONNREFUSED) (void)::unlink(path.c_str());  // a service that was killed
    why = fmt::format("no template service answers at {} ({})", path, std::strerror(error));
    return {};
  }
  ucred peer{};
  socklen_t size = sizeof peer;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 ||
      peer.uid != ::geteuid()) {
    why = fmt::format("the template service at {} is another user's", path);
    return {};
  }
  return fd;
}

std::string scope_of(pid_t pid) {
  std::string scope;
  try {
    scope = read_file(fmt::format("/proc/{}/cgroup", pid));
  } catch (const Error&) {
    return {};  // gone, or not ours to read: no scope matches it
  }
  for (const char* name : kNamespaces) {
    std::error_code ec;
    scope +=
        '\n' + std::filesystem::read_symlink(fmt::format("/proc/{}/ns/{}", pid, name), ec).string();
  }
  return scope;
}

std::filesystem::path template_service_directory() {
  std::string digest = sha256_hex(fmt::format("{}\n{}", ::geteuid(), scope_of(::getpid())));
  std::filesystem::path dir = base_directory() / fmt::format("templates-{}", digest.substr(0, 16));
  private_directory(dir);
  return dir;
}

std::filesystem::path template_service_socket(std::string_view digest) {
  return template_service_directory() / fmt::format("{}.sock", digest.substr(0, 32));
}

UniqueFd hold_preparing_lock(const std::filesystem::path& socket) {
  std::filesystem::path path = socket;
  path.replace_extension(".preparing");
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) fd.reset();
  return fd;
}

bool preparing_elsewhere(const std::filesystem::path& socket) {
  std::filesystem::path path = socket;
  path.replace_extension(".preparing");
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  return fd && ::flock(fd.get(), LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
}

std::vector<ServiceInfo> template_services(bool stop) {
  std::vector<ServiceInfo> services;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(template_service_directory(), ec)) {
    if (entry.path().extension() != ".sock") continue;
    std::string answer = ask(entry.path(), stop ? "stop" : "status", !stop);
    if (answer.starts_with("status\n")) answer.erase(0, 7);
    services.push_back({entry.path(), answer});
  }
  std::sort(services.begin(), services.end(),
            [](const ServiceInfo& a, const ServiceInfo& b) { return a.socket < b.socket; });
  return services;
}

}  // namespace kiln::internal

namespace kiln::pool {

std::vector<TemplateService> template_services(bool stop) {
  std::vector<TemplateService> services;
  for (internal::ServiceInfo& info : internal::template_services(stop)) {
    services.push_back({std::move(info.socket), std::move(info.status)});
  }
  return services;
}

std::filesystem::path template_service_directory() {
  return internal::template_service_directory();
}

}  // namespace kiln::pool
