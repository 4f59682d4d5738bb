// The frames kiln's processes exchange, the pool's workers and the NVRTC compile server alike:
// a 4-byte little-endian length, then that many bytes of CBOR. One codec and one limit.
// Internal, never installed: a private header of the pool layer that the layers above it include
// as "pool/frame.h" (kiln_layer's EXPORTS, src/CMakeLists.txt), so it includes nothing of the
// pool's folder. outbox.h writes these frames to a pipe.
//
//   std::string frame = kiln::internal::encode_frame({{"started", true}});
//   kiln::internal::FrameDecoder decoder;
//   decoder.feed(frame.data(), frame.size());
//   std::optional<nlohmann::json> value = decoder.next();   // {"started": true}
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

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
  // The size the frame being received announces, once its length has arrived.
  std::optional<std::uint32_t> announced_size() const { return announced(); }
  std::uint32_t max_bytes() const noexcept { return max_bytes_; }
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
