// Where kiln's sccache servers keep their sockets, and the reaping of what killed ones left
// (sccache_dir.h).
#include "sccache_dir.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/error.h"

namespace kiln::internal {
namespace {

namespace fs = std::filesystem;

// The longest name make_sccache_directory() gives: the prefix, a pid (at most 7 digits on Linux),
// '-', 16 hex digits.
constexpr std::size_t kLongestName = kSccacheDirectoryPrefix.size() + 7 + 1 + 16;

bool socket_fits(const fs::path& parent) {
  std::size_t length = parent.string().size() + 1 + kLongestName + 1 + kSccacheSocketName.size();
  return length < sizeof(sockaddr_un::sun_path);  // and its terminating NUL
}

// A directory (not a link to one) of this user's that nobody else can enter.
bool is_private_directory(const fs::path& dir) {
  struct stat st {};
  return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
         (st.st_mode & 077) == 0;
}

fs::path temp_root() {
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  return ec ? fs::path("/tmp") : tmp;
}

// Whether the owner of server directory `dir` (named `name`) is gone: its lock is free and it had
// written its pid there; or, when it had not (it may be taking the lock right now), the pid in
// the name runs no more. `lock` keeps the lock held while the directory is removed.
bool owner_gone(const fs::path& dir, std::string_view name, std::optional<FileLock>& lock) {
  fs::path owner = dir / kSccacheOwnerFile;
  struct stat st {};
  if (::lstat(owner.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    lock = FileLock::try_lock(owner);
    if (!lock) return false;  // held: its owner runs
    if (read_file(owner).size() > 0) return true;
  }
  std::string as_temporary = std::string(kTemporaryPrefix);
  as_temporary += name.substr(kSccacheDirectoryPrefix.size());
  std::optional<long> pid = temporary_writer(as_temporary);
  return pid && ::kill(static_cast<pid_t>(*pid), 0) == -1 && errno == ESRCH;
}

}  // namespace

std::vector<fs::path> sccache_directory_candidates() {
  std::vector<fs::path> candidates = {temp_root(), fmt::format("/run/user/{}", ::geteuid()),
                                      "/tmp"};
  if (candidates.front() == candidates.back()) candidates.pop_back();
  return candidates;
}

fs::path sccache_directory_parent(const std::vector<fs::path>& candidates) {
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const fs::path& candidate = candidates[i];
    bool made_private = i == 0 || candidate == "/tmp";  // mkdir 0700 keeps others out
    if (!socket_fits(candidate)) continue;
    if (made_private || is_private_directory(candidate)) return candidate;
  }
  throw Error(fmt::format(
      "no directory for kiln's sccache server socket: a Unix socket path has at most {} bytes, "
      "and {} is too long",
      sizeof(sockaddr_un::sun_path) - 1, candidates.empty() ? "" : candidates.front().string()));
}

SccacheDirectory make_sccache_directory() {
  fs::path parent = sccache_directory_parent(sccache_directory_candidates());
  std::string random = temporary_name();  // ".kiln-tmp-<pid>-<16 hex>"
  fs::path path =
      parent / (std::string(kSccacheDirectoryPrefix) + random.substr(kTemporaryPrefix.size()));
  TempDirectory dir({.custom_path = path, .keep_for_debug = false});
  FileLock owner(dir / kSccacheOwnerFile);
  write_file(dir / kSccacheOwnerFile, std::to_string(::getpid()) + "\n");
  return {std::move(owner), std::move(dir)};
}

void reap_sccache_directories_in(const fs::path& parent) {
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.starts_with(kSccacheDirectoryPrefix) || !is_private_directory(it->path())) continue;
    try {
      std::optional<FileLock> lock;
      if (owner_gone(it->path(), name, lock)) {
        std::error_code removed;
        fs::remove_all(it->path(), removed);
      }
    } catch (const Error&) {  // NOLINT(bugprone-empty-catch): unreadable: another time
    }
  }
}

void reap_sccache_directories() {
  std::vector<fs::path> parents = sccache_directory_candidates();
  for (const fs::path& parent : parents) reap_sccache_directories_in(parent);
}

}  // namespace kiln::internal
