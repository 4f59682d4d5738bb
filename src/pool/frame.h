// The worker protocol's framing: a 4-byte little-endian length, then that many bytes of CBOR
// (pool/cbor.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cbor.h"
#include "kiln/pool.h"

namespace kiln::internal {

// Frames larger than this are refused on both sides: a peer that announces more is broken.
inline constexpr auto kMaxFrameBytes = static_cast<std::uint32_t>(pool::kMaxMessageBytes);

// Appends the frame for `value` to `out`. Throws InvalidArgument, leaving `out` as it was, when
// the encoding exceeds `max_bytes`.
void append_frame(std::string& out, const nlohmann::json& value,
                  std::uint32_t max_bytes = kMaxFrameBytes);
// The frame for `value`, as a new string.
std::string encode_frame(const nlohmann::json& value, std::uint32_t max_bytes = kMaxFrameBytes);

// Frames waiting to be written to a pipe, in order. A frame appended "by reference" does not
// copy the large strings of its value (cbor::Ref): they are written from the value itself,
// which must then stay alive and unchanged until the outbox is empty or cleared.
class Outbox {
 public:
  // The protocol's messages (pool/protocol.h). Each throws InvalidArgument, leaving the outbox
  // as it was, when the frame would exceed `max_bytes`.
  void append_call(std::string_view task, const nlohmann::json& args, bool by_reference,
                   std::uint32_t max_bytes = kMaxFrameBytes);
  void append_answer(const nlohmann::json& value, bool by_reference,
                     std::uint32_t max_bytes = kMaxFrameBytes);
  // `details`: kiln::TaskError's bytes, sent when not empty. Throws InvalidArgument when the
  // frame would exceed the limit.
  void append_error(std::string_view type, std::string_view message, std::string_view details = {});
  // The worker's exit notice: its task is ending the process with exit status `code`.
  void append_exit_notice(int code);

  bool empty() const noexcept { return sent_ == bytes_.size() + referenced_; }
  // One writev(2) of what is unsent. Returns its result: bytes written, or -1 with errno set
  // (EAGAIN on a full non-blocking pipe). `guard_sigpipe`: a reader that went away gives EPIPE
  // rather than SIGPIPE.
  long write_some(int fd, bool guard_sigpipe);
  // Forgets everything, and frees the buffer if it grew large.
  void clear() noexcept;
  std::size_t capacity() const noexcept { return bytes_.capacity(); }

 private:
  template <typename Body>
  void append_framed(std::uint32_t max_bytes, bool by_reference, Body body);

  std::string bytes_;
  std::vector<cbor::Ref> refs_;
  std::size_t referenced_ = 0;  // bytes in refs_
  std::size_t sent_ = 0;        // of the stream bytes_ with refs_ inserted
};

// Turns a byte stream back into values, however the bytes were split.
class FrameDecoder {
 public:
  explicit FrameDecoder(std::uint32_t max_bytes = kMaxFrameBytes) : max_bytes_(max_bytes) {}

  void feed(const char* data, std::size_t size);
  // One read(2) from `fd` straight into the buffer, sized for the rest of the frame being
  // received (so a large frame is read without being copied again). Returns what read returned.
  ssize_t read_from(int fd);
  // The next complete value, or std::nullopt until more bytes arrive. Throws ProtocolError for a
  // length over the limit or a body that is not CBOR; the decoder is unusable afterwards.
  std::optional<nlohmann::json> next();
  // True when no partial frame is buffered (a clean place for the stream to end).
  bool at_boundary() const noexcept { return begin_ == end_; }
  // The buffer's size. It grows to the largest frame received and stays, until release().
  std::size_t capacity() const noexcept { return capacity_; }
  // Frees the buffer if it holds no partial frame.
  void release() noexcept;

 private:
  // Makes room for at least `room` more bytes after end_.
  void reserve(std::size_t room);
  // The announced size of the frame at begin_, once its length is buffered.
  std::optional<std::uint32_t> announced() const;

  std::uint32_t max_bytes_;
  std::unique_ptr<char[]> data_;
  std::size_t capacity_ = 0;
  std::size_t begin_ = 0;  // first byte not yet decoded
  std::size_t end_ = 0;    // one past the last byte received
};

}  // namespace kiln::internal
