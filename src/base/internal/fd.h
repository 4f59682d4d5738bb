// File descriptors: an owning handle, close-on-exec pipes, and the one EINTR retry helper.
#pragma once

#include <poll.h>
#include <sys/uio.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <utility>

namespace kiln::internal {

// Calls `fn` until it does not fail with EINTR. close() must never go through here: on Linux
// the descriptor is gone even when close() reports EINTR.
template <typename Fn>
auto retry_eintr(Fn&& fn) {
  decltype(fn()) result;
  do {
    result = fn();
  } while (result == -1 && errno == EINTR);
  return result;
}

// Owns one file descriptor and closes it when destroyed. Move-only.
class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }
  // Closes the descriptor held now (if any) and holds `fd` instead.
  void reset(int fd = -1) noexcept;
  // Gives up ownership without closing.
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// A pipe whose both ends are close-on-exec (atomically, so no concurrent spawn can inherit it)
// and never 0, 1 or 2, so that mapping them onto a child's stdio cannot clobber one another even
// when the host closed its own stdio. Throws SystemError.
Pipe make_pipe();

// Sets O_NONBLOCK on `fd`. Throws SystemError.
void set_nonblocking(int fd);

// Writes up to `size` bytes like write(2), but a reader that went away gives EPIPE without
// raising SIGPIPE in the host. Returns the count written or -1 with errno set.
long write_without_sigpipe(int fd, const char* data, unsigned long size);
// poll(2) until `deadline` (std::nullopt: none) with the deadline's own precision (ppoll), not
// rounded up to a millisecond; EINTR is retried with the time left. Returns poll's result.
int poll_until(pollfd* fds, nfds_t count,
               std::optional<std::chrono::steady_clock::time_point> deadline);

// Whether `fd` polls readable right now (false for -1).
bool readable(int fd);

// Polls `fd` without sleeping, yielding the CPU between polls, for up to `limit`; true as soon
// as it is readable. For a peer that answers within microseconds: waking a sleeping thread on
// another CPU costs tens of microseconds on a virtual machine, more than the answer takes.
bool spin_until_readable(int fd, std::chrono::microseconds limit);

// The same for writev(2).
long writev_without_sigpipe(int fd, const struct iovec* iov, int count);

}  // namespace kiln::internal
