#include "frame.h"

#include <unistd.h>

#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "cbor.h"
#include "internal/fd.h"
#include "kiln/error.h"
#include "outbox.h"

namespace kiln::internal {
namespace {

// The room a read asks for when no larger frame is being received.
constexpr std::size_t kReadBytes = std::size_t{64} * 1024;
// Growth past this size is by what is needed, not by doubling.
constexpr std::size_t kDoublingLimit = std::size_t{256} * 1024;

// An emptied outbox keeps at most this much memory.
constexpr std::size_t kKeptCapacity = std::size_t{256} * 1024;
// One writev(2) takes at most this many pieces.
constexpr int kMaxPieces = 64;

// Reserves the 4 length bytes, lets `body` append the CBOR (with large strings in `refs`, when
// given), then fills the length in.
template <typename Body>
void append_framed(std::string& out, std::vector<cbor::Ref>* refs, std::uint32_t max_bytes,
                   Body body) {
  std::size_t start = out.size();
  std::size_t first_ref = refs != nullptr ? refs->size() : 0;
  out.append(4, '\0');
  body();
  std::size_t size = out.size() - start - 4;
  if (refs != nullptr) {
    for (std::size_t i = first_ref; i < refs->size(); ++i) size += (*refs)[i].size;
  }
  if (size > max_bytes) {
    out.resize(start);
    if (refs != nullptr) refs->resize(first_ref);
    throw InvalidArgument(fmt::format(
        "a value of {} bytes exceeds the pool's frame limit of {} bytes", size, max_bytes));
  }
  for (int i = 0; i < 4; ++i) out[start + i] = static_cast<char>((size >> (8 * i)) & 0xff);
}

}  // namespace

void append_frame(std::string& out, const nlohmann::json& value, std::uint32_t max_bytes) {
  append_framed(out, nullptr, max_bytes, [&] { cbor::append(out, value); });
}

std::string encode_frame(const nlohmann::json& value, std::uint32_t max_bytes) {
  std::string frame;
  append_frame(frame, value, max_bytes);
  return frame;
}

template <typename Body>
void Outbox::append_framed(std::uint32_t max_bytes, bool by_reference, Body body) {
  std::size_t first_ref = refs_.size();
  internal::append_framed(bytes_, by_reference ? &refs_ : nullptr, max_bytes, body);
  for (std::size_t i = first_ref; i < refs_.size(); ++i) referenced_ += refs_[i].size;
}

void Outbox::append_call(std::string_view task, const nlohmann::json& args, bool by_reference,
                         std::uint32_t max_bytes) {
  append_framed(max_bytes, by_reference, [&] {
    cbor::append_array_head(bytes_, 2);
    cbor::append_text(bytes_, task);
    cbor::append(bytes_, args, by_reference ? &refs_ : nullptr);
  });
}

void Outbox::append_answer(const nlohmann::json& value, bool by_reference,
                           std::uint32_t max_bytes) {
  append_framed(max_bytes, by_reference, [&] {
    cbor::append_array_head(bytes_, 2);
    cbor::append(bytes_, nlohmann::json(true));
    cbor::append(bytes_, value, by_reference ? &refs_ : nullptr);
  });
}

void Outbox::append_error(std::string_view type, std::string_view message,
                          std::string_view details) {
  append_framed(kMaxFrameBytes, false, [&] {
    cbor::append_array_head(bytes_, details.empty() ? 3 : 4);
    cbor::append(bytes_, nlohmann::json(false));
    cbor::append_text(bytes_, type);
    cbor::append_text(bytes_, message);
    if (!details.empty()) {
      cbor::append(bytes_, nlohmann::json::binary({details.begin(), details.end()}));
    }
  });
}

void Outbox::append_exit_notice(int code) {
  append_framed(kMaxFrameBytes, false, [&] {
    cbor::append_array_head(bytes_, 2);
    cbor::append(bytes_, nlohmann::json(nullptr));
    cbor::append(bytes_, nlohmann::json(code));
  });
}

long Outbox::write_some(int fd, bool guard_sigpipe) {
  // The stream is bytes_ with each ref's contents inserted before bytes_[ref.at]: walk its
  // pieces, skip what was sent, and hand the next ones to writev.
  std::array<iovec, kMaxPieces> pieces{};
  int count = 0;
  std::size_t position = 0;  // in the stream, of the piece being considered
  std::size_t from = 0;      // in bytes_
  auto add = [&](const char* data, std::size_t size) {
    if (count == kMaxPieces || size == 0) return;
    if (position + size > sent_) {
      std::size_t skip = sent_ > position ? sent_ - position : 0;
      // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): writev does not write to it
      pieces[count++] = {const_cast<char*>(data + skip), size - skip};
    }
    position += size;
  };
  for (const cbor::Ref& ref : refs_) {
    add(bytes_.data() + from, ref.at - from);
    add(ref.data, ref.size);
    from = ref.at;
  }
  add(bytes_.data() + from, bytes_.size() - from);
  if (count == 0) return 0;
  long n = guard_sigpipe ? writev_without_sigpipe(fd, pieces.data(), count)
                         : retry_eintr([&] { return ::writev(fd, pieces.data(), count); });
  if (n > 0) sent_ += static_cast<std::size_t>(n);
  if (empty()) clear();
  return n;
}

void Outbox::clear() noexcept {
  bytes_.clear();
  if (bytes_.capacity() > kKeptCapacity) std::string().swap(bytes_);
  refs_.clear();
  referenced_ = 0;
  sent_ = 0;
}

void FrameDecoder::reserve(std::size_t room) {
  std::size_t used = end_ - begin_;
  if (capacity_ - end_ >= room) return;
  if (capacity_ - used >= room) {
    std::memmove(data_.get(), data_.get() + begin_, used);
  } else {
    std::size_t capacity = std::max(used + room, std::min(capacity_ * 2, used + kDoublingLimit));
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

void FrameDecoder::release() noexcept {
  if (begin_ != end_) return;
  data_.reset();
  capacity_ = begin_ = end_ = 0;
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
    throw ProtocolError(
        fmt::format("worker protocol: a frame of {} bytes is not valid CBOR: {}", *size, e.what()));
  }
  begin_ += 4 + std::size_t{*size};
  if (begin_ == end_) begin_ = end_ = 0;
  return value;
}

}  // namespace kiln::internal
