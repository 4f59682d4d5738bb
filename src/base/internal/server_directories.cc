// claim_server_directory(), reap_server_directories() and server_files()
// (internal/server_directories.h).
#include "internal/server_directories.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "internal/fd.h"
#include "kiln/error.h"

namespace kiln::internal {
namespace {

namespace fs = std::filesystem;

fs::path lock_of(const fs::path& dir) { return dir.string() + ".lock"; }

// The socket beside a server directory: <name>.sock for <name>.d.
fs::path socket_of(const fs::path& dir) {
  return dir.parent_path() / (dir.stem().string() + ".sock");
}

// Whether a server may be listening on `socket`: false only when nothing is there or nothing
// accepts (ECONNREFUSED); anything else is taken to be a server.
bool someone_listens(const fs::path& socket) {
  sockaddr_un addr{};
  if (socket.string().size() >= sizeof addr.sun_path) return true;
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return true;
  int r = retry_eintr(
      [&] { return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr); });
  return r == 0 || (errno != ECONNREFUSED && errno != ENOENT);
}

bool is_directory_itself(const fs::path& path, struct stat* st) {
  return ::lstat(path.c_str(), st) == 0 && S_ISDIR(st->st_mode);
}

// Removes `dir` and its socket; the caller made sure its server is gone.
void remove_server_directory(const fs::path& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  struct stat st {};
  fs::path socket = socket_of(dir);
  if (::lstat(socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) (void)::unlink(socket.c_str());
}

// The server directories in `servers` (never through a symlink).
std::vector<fs::path> server_directories(const fs::path& servers) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(servers, ec)) {
    struct stat st {};
    if (entry.path().extension() == ".d" && is_directory_itself(entry.path(), &st)) {
      dirs.push_back(entry.path());
    }
  }
  return dirs;
}

void reap_if_gone(const fs::path& dir) {
  struct stat st {};
  if (::lstat(lock_of(dir).c_str(), &st) == 0) {
    std::optional<FileLock> held;
    try {
      held = FileLock::try_lock(lock_of(dir));
    } catch (const Error&) {
      return;  // cannot tell: keep it
    }
    if (held) remove_server_directory(dir);  // held while removing: no server starts meanwhile
    return;
  }
  // Made by a kiln before the locks: gone when nobody listens and nothing changed for a while.
  if (!is_directory_itself(dir, &st)) return;
  bool idle = ::time(nullptr) - st.st_mtim.tv_sec >= std::time_t{kLegacyIdleMinutes} * 60;
  if (idle && !someone_listens(socket_of(dir))) remove_server_directory(dir);
}

}  // namespace

std::optional<FileLock> claim_server_directory(const fs::path& dir,
                                               std::chrono::milliseconds timeout) {
  std::optional<FileLock> held = FileLock::lock_for(lock_of(dir), timeout);
  if (!held) return std::nullopt;
  std::error_code ec;
  fs::remove_all(dir, ec);  // what a killed server with this directory left
  if (::mkdir(dir.c_str(), 0700) != 0) {
    throw SystemError(fmt::format("create the server directory '{}'", dir.string()), errno);
  }
  return held;
}

void reap_server_directories(const fs::path& servers) {
  for (const fs::path& dir : server_directories(servers)) reap_if_gone(dir);
}

std::vector<ServerFile> server_files(const fs::path& servers) {
  reap_server_directories(servers);
  std::vector<ServerFile> files;
  for (const fs::path& dir : server_directories(servers)) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      struct stat st {};
      if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
          entry.path().extension() == ".lock") {
        continue;
      }
      files.push_back(
          {.path = entry.path(),
           .size = static_cast<std::uint64_t>(st.st_size),
           .modified_ns = std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec,
           .remade = entry.path().extension() == ".pch"});
    }
  }
  return files;
}

}  // namespace kiln::internal
