// The socket side of kiln's NVRTC compile server's frames (nvrtc_server.h): the pool's one codec
// (pool/frame.h: a 4-byte little-endian length, then CBOR, one limit) read and written with
// deadlines, so that a peer that stopped (SIGSTOP, a debugger) or never sends holds the other
// side only until then.
#include <poll.h>
#include <sys/socket.h>

#include <cstdint>

#include "internal/fd.h"
#include "kiln/error.h"
#include "nvrtc_server.h"
#include "pool/frame.h"

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

}  // namespace

bool write_frame(int fd, const nlohmann::json& value, std::optional<Clock::time_point> deadline) {
  std::string frame;
  try {
    frame = kiln::internal::encode_frame(value);
  } catch (const InvalidArgument&) {  // over the one frame limit: nothing is sent
    return false;
  }
  return send_all(fd, frame.data(), frame.size(), deadline);
}

FrameRead read_frame(int fd, kiln::internal::FrameDecoder& decoder,
                     std::optional<Clock::time_point> deadline, int cancel_fd) {
  FrameRead result;
  for (;;) {
    try {
      if (std::optional<nlohmann::json> value = decoder.next()) {
        result.value = std::move(*value);
        return result;
      }
    } catch (const ProtocolError&) {  // a length over the decoder's limit (said before its
                                      // body is read), or a body that is not CBOR
      std::uint32_t size = decoder.announced_size().value_or(0);
      if (size > decoder.max_bytes()) result.too_large = size;
      return result;
    }
    int ready = wait_readable(fd, deadline, cancel_fd);
    result.timed_out = ready == 0;
    result.cancelled = ready == 2;
    if (ready != 1 || decoder.read_from(fd) <= 0) return result;
  }
}

}  // namespace kiln::cuda::internal
