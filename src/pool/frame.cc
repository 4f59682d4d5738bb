#include "pool/frame.h"

#include <fmt/format.h>

#include "kiln/error.h"

namespace kiln::internal {
namespace {

constexpr std::size_t kKeptCapacity = std::size_t{256} * 1024;

}  // namespace

std::string encode_frame(const nlohmann::json& value, std::uint32_t max_bytes) {
  std::vector<std::uint8_t> body = nlohmann::json::to_cbor(value);
  if (body.size() > max_bytes) {
    throw InvalidArgument(fmt::format(
        "a value of {} bytes exceeds the pool's frame limit of {} bytes", body.size(), max_bytes));
  }
  auto size = static_cast<std::uint32_t>(body.size());
  std::string frame;
  frame.reserve(4 + body.size());
  for (int shift = 0; shift < 32; shift += 8)
    frame.push_back(static_cast<char>((size >> shift) & 0xff));
  frame.append(body.begin(), body.end());
  return frame;
}

void FrameDecoder::feed(const char* data, std::size_t size) {
  if (offset_ > 0) {  // drop what was decoded, so the buffer never grows past one frame
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  if (buffer_.empty() && buffer_.capacity() > kKeptCapacity) {
    std::string().swap(buffer_);  // one large frame must not pin its memory in an idle worker
  }
  buffer_.append(data, size);
}

std::optional<nlohmann::json> FrameDecoder::next() {
  if (buffer_.size() - offset_ < 4) return std::nullopt;
  std::uint32_t size = 0;
  for (int i = 3; i >= 0; --i)
    size = (size << 8) | static_cast<unsigned char>(buffer_[offset_ + i]);
  if (size > max_bytes_) {
    throw ProtocolError(fmt::format(
        "worker protocol: a frame announces {} bytes, over the limit of {}", size, max_bytes_));
  }
  if (buffer_.size() - offset_ - 4 < size) return std::nullopt;
  auto begin = buffer_.begin() + static_cast<std::ptrdiff_t>(offset_ + 4);
  nlohmann::json value;
  try {
    // allow_exceptions = false still lets some errors through as exceptions (an array announcing
    // more elements than memory holds, found by fuzz/frame_fuzz).
    value = nlohmann::json::from_cbor(begin, begin + size, true, false);
  } catch (const nlohmann::json::exception& e) {
    throw ProtocolError(
        fmt::format("worker protocol: a frame of {} bytes does not decode: {}", size, e.what()));
  }
  if (value.is_discarded()) {
    throw ProtocolError(
        fmt::format("worker protocol: a frame of {} bytes is not valid CBOR", size));
  }
  offset_ += 4 + size;
  return value;
}

}  // namespace kiln::internal
