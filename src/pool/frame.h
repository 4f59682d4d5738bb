// The worker protocol's framing: a 4-byte little-endian length, then that many bytes of CBOR.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kiln::internal {

// Frames larger than this are refused on both sides: a peer that announces more is broken.
inline constexpr std::uint32_t kMaxFrameBytes = std::uint32_t{256} << 20;

// The frame for `value`. Throws InvalidArgument when its encoding exceeds `max_bytes`.
std::string encode_frame(const nlohmann::json& value, std::uint32_t max_bytes = kMaxFrameBytes);

// Turns a byte stream back into values, however the bytes were split.
class FrameDecoder {
 public:
  explicit FrameDecoder(std::uint32_t max_bytes = kMaxFrameBytes) : max_bytes_(max_bytes) {}

  void feed(const char* data, std::size_t size);
  // The next complete value, or std::nullopt until more bytes arrive. Throws ProtocolError for a
  // length over the limit or a body that is not CBOR; the decoder is unusable afterwards.
  std::optional<nlohmann::json> next();
  // True when no partial frame is buffered (a clean place for the stream to end).
  bool at_boundary() const noexcept { return offset_ == buffer_.size(); }

 private:
  std::uint32_t max_bytes_;
  std::string buffer_;
  std::size_t offset_ = 0;
};

}  // namespace kiln::internal
