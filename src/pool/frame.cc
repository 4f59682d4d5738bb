#include "pool/frame.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "internal/fd.h"
#include "kiln/error.h"
#include "pool/cbor.h"

namespace kiln::internal {
namespace {

// The room a read asks for when no larger frame is being received.
constexpr std::size_t kReadBytes = std::size_t{64} * 1024;
// An idle decoder keeps at most this much memory: one large frame must not pin its buffer.
constexpr std::size_t kKeptCapacity = std::size_t{256} * 1024;

// Reserves the 4 length bytes, lets `body` append the CBOR, then fills the length in.
template <typename Body>
void append_framed(std::string& out, std::uint32_t max_bytes, Body body) {
  std::size_t start = out.size();
  out.append(4, '\0');
  body();
  std::size_t size = out.size() - start - 4;
  if (size > max_bytes) {
    out.resize(start);
    throw InvalidArgument(fmt::format(
        "a value of {} bytes exceeds the pool's frame limit of {} bytes", size, max_bytes));
  }
  for (int i = 0; i < 4; ++i) out[start + i] = static_cast<char>((size >> (8 * i)) & 0xff);
}

}  // namespace

void append_frame(std::string& out, const nlohmann::json& value, std::uint32_t max_bytes) {
  append_framed(out, max_bytes, [&] { cbor::append(out, value); });
}

void append_call_frame(std::string& out, std::string_view task, const nlohmann::json& args,
                       std::uint32_t max_bytes) {
  append_framed(out, max_bytes, [&] {
    cbor::append_array_head(out, 2);
    cbor::append_text(out, task);
    cbor::append(out, args);
  });
}

void append_answer_frame(std::string& out, const nlohmann::json& value, std::uint32_t max_bytes) {
  append_framed(out, max_bytes, [&] {
    cbor::append_array_head(out, 2);
    cbor::append(out, nlohmann::json(true));
    cbor::append(out, value);
  });
}

void append_error_frame(std::string& out, std::string_view type, std::string_view message) {
  append_framed(out, kMaxFrameBytes, [&] {
    cbor::append_array_head(out, 3);
    cbor::append(out, nlohmann::json(false));
    cbor::append_text(out, type);
    cbor::append_text(out, message);
  });
}

std::string encode_frame(const nlohmann::json& value, std::uint32_t max_bytes) {
  std::string frame;
  append_frame(frame, value, max_bytes);
  return frame;
}

void FrameDecoder::reserve(std::size_t room) {
  std::size_t used = end_ - begin_;
  if (used == 0 && capacity_ > kKeptCapacity && room <= kKeptCapacity) {
    data_.reset();
    capacity_ = 0;
  }
  if (capacity_ - end_ >= room) return;
  if (capacity_ - used >= room) {
    std::memmove(data_.get(), data_.get() + begin_, used);
  } else {
    std::size_t capacity = std::max(used + room, std::min(capacity_ * 2, used + kKeptCapacity));
    auto data = std::make_unique_for_overwrite<char[]>(capacity);
    if (used > 0) std::memcpy(data.get(), data_.get() + begin_, used);
    data_ = std::move(data);
    capacity_ = capacity;
  }
  begin_ = 0;
  end_ = used;
}

std::optional<std::uint32_t> FrameDecoder::announced() const {
  if (end_ - begin_ < 4) return std::nullopt;
  std::uint32_t size = 0;
  for (int i = 3; i >= 0; --i) size = (size << 8) | static_cast<unsigned char>(data_[begin_ + i]);
  return size;
}

void FrameDecoder::feed(const char* data, std::size_t size) {
  reserve(size);
  std::memcpy(data_.get() + end_, data, size);
  end_ += size;
}

ssize_t FrameDecoder::read_from(int fd) {
  std::size_t room = kReadBytes;
  if (std::optional<std::uint32_t> size = announced(); size && *size <= max_bytes_) {
    room = std::max(room, std::size_t{*size} + 4 - (end_ - begin_));
  }
  reserve(room);
  ssize_t n = retry_eintr([&] { return ::read(fd, data_.get() + end_, capacity_ - end_); });
  if (n > 0) end_ += static_cast<std::size_t>(n);
  return n;
}

std::optional<nlohmann::json> FrameDecoder::next() {
  std::optional<std::uint32_t> size = announced();
  if (!size) return std::nullopt;
  if (*size > max_bytes_) {
    throw ProtocolError(fmt::format(
        "worker protocol: a frame announces {} bytes, over the limit of {}", *size, max_bytes_));
  }
  if (end_ - begin_ - 4 < *size) return std::nullopt;
  nlohmann::json value;
  try {
    value = cbor::decode(data_.get() + begin_ + 4, *size);
  } catch (const ProtocolError& e) {
    throw ProtocolError(fmt::format("worker protocol: a frame of {} bytes is not valid CBOR: {}",
                                    *size, e.what()));
  }
  begin_ += 4 + std::size_t{*size};
  if (begin_ == end_) begin_ = end_ = 0;
  return value;
}

}  // namespace kiln::internal
