// The framing of kiln's NVRTC compile server (nvrtc_server.h): a 4-byte little-endian length,
// then that many bytes of CBOR. Both sides read and write it with deadlines, so that a peer that
// stopped (SIGSTOP, a debugger) or never sends holds the other side only until then.
#include <poll.h>
#include <sys/socket.h>

#include <cstdint>
#include <limits>

#include "internal/fd.h"
#include "nvrtc_server.h"

namespace kiln::cuda::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Sends all of `data`, waiting for room until `deadline`. False when the peer went away or the
// deadline passed first.
bool send_all(int fd, const char* data, size_t size, std::optional<Clock::time_point> deadline) {
  size_t sent = 0;
  while (sent < size) {
    ssize_t n = kiln::internal::retry_eintr(
        [&] { return ::send(fd, data + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT); });
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return false;
    pollfd p{fd, POLLOUT, 0};
    if (kiln::internal::poll_until(&p, 1, deadline) <= 0) return false;
  }
  return true;
}

// What waiting for `fd` to be readable gave: 1 readable, 0 the deadline passed, -1 an error,
// 2 `cancel_fd` became readable.
int wait_readable(int fd, std::optional<Clock::time_point> deadline, int cancel_fd) {
  pollfd fds[2] = {{fd, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
  int ready = kiln::internal::poll_until(fds, cancel_fd >= 0 ? 2 : 1, deadline);
  if (ready <= 0) return ready;
  if (cancel_fd >= 0 && (fds[1].revents & POLLIN) != 0) return 2;
  return 1;
}

// Reads exactly `size` bytes into `out`; false (with `result` saying why, when it knows) on end
// of file, an error, the deadline or a cancel.
bool read_exactly(int fd, char* out, size_t size, std::optional<Clock::time_point> deadline,
                  int cancel_fd, FrameRead& result) {
  size_t got = 0;
  while (got < size) {
    int ready = wait_readable(fd, deadline, cancel_fd);
    result.timed_out = ready == 0;
    result.cancelled = ready == 2;
    if (ready != 1) return false;
    ssize_t n = kiln::internal::retry_eintr([&] { return ::read(fd, out + got, size - got); });
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool write_frame(int fd, const std::string& cbor, std::optional<Clock::time_point> deadline) {
  auto size = static_cast<std::uint32_t>(cbor.size());
  const char head[4] = {static_cast<char>(size), static_cast<char>(size >> 8),
                        static_cast<char>(size >> 16), static_cast<char>(size >> 24)};
  return cbor.size() <= std::numeric_limits<std::uint32_t>::max() &&
         send_all(fd, head, sizeof head, deadline) &&
         send_all(fd, cbor.data(), cbor.size(), deadline);
}

FrameRead read_frame(int fd, std::optional<Clock::time_point> deadline, int cancel_fd,
                     size_t max_bytes) {
  FrameRead result;
  unsigned char head[4];
  if (!read_exactly(fd, reinterpret_cast<char*>(head), sizeof head, deadline, cancel_fd, result)) {
    return result;
  }
  size_t size =
      size_t{head[0]} | size_t{head[1]} << 8 | size_t{head[2]} << 16 | size_t{head[3]} << 24;
  if (size > max_bytes) {
    result.too_large = size;
    return result;
  }
  std::string body(size, '\0');  // read in place: the frame is held once, not copied
  if (read_exactly(fd, body.data(), size, deadline, cancel_fd, result)) {
    result.cbor = std::move(body);
  }
  return result;
}

}  // namespace kiln::cuda::internal
