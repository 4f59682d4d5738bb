#include "kiln/file_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "internal/fd.h"
#include "kiln/error.h"

namespace kiln {
namespace fs = std::filesystem;
namespace {

internal::UniqueFd open_lock_file(const fs::path& path) {
  int fd = internal::retry_eintr(
      [&] { return ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600); });
  if (fd == -1) throw SystemError(fmt::format("open lock file '{}'", path.string()), errno);
  return internal::UniqueFd(fd);
}

// F_OFD_SETLK(W) of a write lock over the whole file. Returns true when held, false when busy
// (non-blocking only); throws on any other failure.
bool lock_whole_file(int fd, const fs::path& path, bool wait) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 0;  // to the end, however the file grows
  int rc =
      internal::retry_eintr([&] { return ::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl); });
  if (rc == 0) return true;
  if (!wait && (errno == EAGAIN || errno == EACCES)) return false;
  throw SystemError(fmt::format("lock '{}'", path.string()), errno);
}

}  // namespace

FileLock::FileLock(const fs::path& path) : path_(path) {
  internal::UniqueFd fd = open_lock_file(path);
  lock_whole_file(fd.get(), path, /*wait=*/true);
  fd_ = fd.release();
}

FileLock::FileLock(fs::path path, int fd) noexcept : path_(std::move(path)), fd_(fd) {}

std::optional<FileLock> FileLock::try_lock(const fs::path& path) {
  internal::UniqueFd fd = open_lock_file(path);
  if (!lock_whole_file(fd.get(), path, /*wait=*/false)) return std::nullopt;
  return FileLock(path, fd.release());
}

std::optional<FileLock> FileLock::lock_for(const fs::path& path,
                                           std::chrono::milliseconds timeout) {
  // The kernel has no timed wait for file locks; a poll with growing pauses (1 ms up to 50 ms)
  // keeps the added latency small without signals or alarms.
  internal::UniqueFd fd = open_lock_file(path);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    if (lock_whole_file(fd.get(), path, /*wait=*/false)) return FileLock(path, fd.release());
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

FileLock::FileLock(FileLock&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

FileLock::~FileLock() { release(); }

void FileLock::release() noexcept {
  // Closing the only descriptor of the open file description drops the OFD lock.
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
}

FileLock filelock(const fs::path& path) { return FileLock(path); }

}  // namespace kiln
