#include "internal/fd.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <ctime>
#include <thread>

#include "kiln/error.h"

namespace kiln::internal {

void UniqueFd::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

namespace {

// Moves `fd` to a number >= 3 (keeping close-on-exec) when it landed on a stdio number.
UniqueFd above_stdio(int fd) {
  UniqueFd owned(fd);
  if (fd > 2) return owned;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (moved == -1) throw SystemError("fcntl(F_DUPFD_CLOEXEC)", errno);
  return UniqueFd(moved);
}

}  // namespace

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SystemError("pipe2", errno);
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  return Pipe{above_stdio(read_end.release()), above_stdio(write_end.release())};
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags == -1 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1) {
    throw SystemError("fcntl(O_NONBLOCK)", errno);
  }
}

int poll_until(pollfd* fds, nfds_t count,
               std::optional<std::chrono::steady_clock::time_point> deadline) {
  for (;;) {
    timespec left{};
    if (deadline) {
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    *deadline - std::chrono::steady_clock::now())
                    .count();
      if (ns > 0)
        left = {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    }
    int r = ::ppoll(fds, count, deadline ? &left : nullptr, nullptr);
    if (r != -1 || errno != EINTR) return r;
  }
}

bool spin_until_readable(int fd, std::chrono::microseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  do {
    if (readable(fd)) return true;
    std::this_thread::yield();  // a peer on this same CPU gets to run
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

long write_without_sigpipe(int fd, const char* data, unsigned long size) {
  iovec one{const_cast<char*>(data), size};  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  return writev_without_sigpipe(fd, &one, 1);
}

long writev_without_sigpipe(int fd, const struct iovec* iov, int count) {
  // SIGPIPE from write(2) is directed at the writing thread: block it here, and if the write
  // raised it, consume it before unblocking, so the host's disposition never sees it.
  sigset_t pipe_only, old_mask;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask);
  long written = retry_eintr([&] { return ::writev(fd, iov, count); });
  int saved_errno = errno;
  if (written == -1 && saved_errno == EPIPE && !was_pending) {
    const timespec zero{0, 0};
    retry_eintr([&] { return ::sigtimedwait(&pipe_only, nullptr, &zero); });
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  errno = saved_errno;
  return written;
}

bool readable(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  return retry_eintr([&] { return ::poll(&p, 1, 0); }) > 0;
}

}  // namespace kiln::internal
