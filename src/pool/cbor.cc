#include "cbor.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "kiln/error.h"

namespace kiln::internal::cbor {
namespace {

using Json = nlohmann::json;

// The major types of RFC 8949, section 3.1.
enum class Major : std::uint8_t {
  unsigned_integer = 0,
  negative_integer = 1,
  byte_string = 2,
  text_string = 3,
  array = 4,
  map = 5,
  tag = 6,
  simple = 7  // and floats
};

void append_head(std::string& out, Major major, std::uint64_t n) {
  auto first = static_cast<char>(static_cast<std::uint8_t>(major) << 5);
  if (n < 24) {
    out.push_back(static_cast<char>(first | static_cast<char>(n)));
    return;
  }
  int bytes = n <= 0xff ? 1 : n <= 0xffff ? 2 : n <= 0xffffffff ? 4 : 8;
  int info = bytes == 1 ? 24 : bytes == 2 ? 25 : bytes == 4 ? 26 : 27;
  out.push_back(static_cast<char>(first | static_cast<char>(info)));
  for (int shift = (bytes - 1) * 8; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((n >> shift) & 0xff));
}

[[noreturn]] void fail(std::string_view what, std::size_t at) {
  throw ProtocolError(fmt::format("byte {}: {}", at, what));
}

class Reader {
 public:
  Reader(const char* data, std::size_t size)
      : begin_(reinterpret_cast<const std::uint8_t*>(data)), at_(begin_), end_(begin_ + size) {}

  Json item(int depth) {
    if (depth > kMaxDepth) fail(fmt::format("nested deeper than {} levels", kMaxDepth), offset());
    std::size_t start = offset();
    std::uint8_t first = byte();
    auto major = static_cast<Major>(first >> 5);
    int info = first & 0x1f;
    if (major == Major::simple) return simple(info, start);
    std::uint64_t n = argument(info, start);
    switch (major) {
      case Major::unsigned_integer:
        return Json(n);
      case Major::negative_integer:
        if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
          fail("a negative integer below -2^63", start);
        return Json(std::int64_t{-1} - static_cast<std::int64_t>(n));
      case Major::byte_string:
        return Json::binary(bytes(n));
      case Major::text_string: {
        const std::uint8_t* p = take(n);
        return Json(std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)));
      }
      case Major::array: {
        check_count(n, start);
        Json array = Json::array();
        auto& items = array.get_ref<Json::array_t&>();
        items.reserve(static_cast<std::size_t>(n));
        for (std::uint64_t i = 0; i < n; ++i) items.push_back(item(depth + 1));
        return array;
      }
      case Major::map: {
        check_count(n, start);
        Json map = Json::object();
        auto& members = map.get_ref<Json::object_t&>();
        for (std::uint64_t i = 0; i < n; ++i) {
          std::size_t key_at = offset();
          Json key = item(depth + 1);
          if (!key.is_string()) fail("a map key that is not a text string", key_at);
          members.insert_or_assign(std::move(key.get_ref<std::string&>()), item(depth + 1));
        }
        return map;
      }
      case Major::tag: {
        std::size_t tagged_at = offset();
        if (at_ == end_ || static_cast<Major>(*at_ >> 5) != Major::byte_string)
          fail("a tag on something not a byte string", tagged_at);
        std::uint8_t inner = byte();
        std::uint64_t size = argument(inner & 0x1f, tagged_at);
        return Json::binary(bytes(size), n);
      }
      case Major::simple:
        break;
    }
    fail("unreachable", start);
  }

  bool at_end() const noexcept { return at_ == end_; }
  std::size_t offset() const noexcept { return static_cast<std::size_t>(at_ - begin_); }

 private:
  std::uint8_t byte() {
    if (at_ == end_) fail("the input ends inside an item", offset());
    return *at_++;
  }

  const std::uint8_t* take(std::uint64_t n) {
    if (n > static_cast<std::uint64_t>(end_ - at_))
      fail(fmt::format("a length of {} bytes runs past the end of the input", n), offset());
    const std::uint8_t* p = at_;
    at_ += n;
    return p;
  }

  std::uint64_t big_endian(int size) {
    const std::uint8_t* p = take(static_cast<std::uint64_t>(size));
    std::uint64_t n = 0;
    for (int i = 0; i < size; ++i) n = (n << 8) | p[i];
    return n;
  }

  std::uint64_t argument(int info, std::size_t start) {
    if (info < 24) return static_cast<std::uint64_t>(info);
    switch (info) {
      case 24:
        return big_endian(1);
      case 25:
        return big_endian(2);
      case 26:
        return big_endian(4);
      case 27:
        return big_endian(8);
      case 31:
        fail("an indefinite length (kiln never writes one)", start);
      default:
        fail(fmt::format("reserved additional information {}", info), start);
    }
  }

  // Every item takes at least one byte: a count above what is left cannot be honest, and must not
  // reserve memory for it.
  void check_count(std::uint64_t n, std::size_t start) const {
    if (n > static_cast<std::uint64_t>(end_ - at_))
      fail(fmt::format("{} items announced, with {} bytes left", n, end_ - at_), start);
  }

  std::vector<std::uint8_t> bytes(std::uint64_t n) {
    const std::uint8_t* p = take(n);
    return std::vector<std::uint8_t>(p, p + n);
  }

  Json simple(int info, std::size_t start) {
    switch (info) {
      case 20:
        return Json(false);
      case 21:
        return Json(true);
      case 22:
      case 23:  // undefined: the closest Value is null
        return Json(nullptr);
      case 25:
        return Json(half_to_double(static_cast<std::uint16_t>(big_endian(2))));
      case 26:
        return Json(
            static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(big_endian(4)))));
      case 27:
        return Json(std::bit_cast<double>(big_endian(8)));
      default:
        fail(fmt::format("simple value {} is not one kiln reads", info), start);
    }
  }

  static double half_to_double(std::uint16_t half) {
    int exponent = (half >> 10) & 0x1f;
    int mantissa = half & 0x3ff;
    double magnitude = 0;
    if (exponent == 0) {
      magnitude = std::ldexp(mantissa, -24);
    } else if (exponent == 31) {
      magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity()
                                : std::numeric_limits<double>::quiet_NaN();
    } else {
      magnitude = std::ldexp(mantissa + 1024, exponent - 25);
    }
    return (half & 0x8000) != 0 ? -magnitude : magnitude;
  }

  const std::uint8_t* begin_;
  const std::uint8_t* at_;
  const std::uint8_t* end_;
};

}  // namespace

void append_array_head(std::string& out, std::size_t size) { append_head(out, Major::array, size); }

namespace {

void append_string(std::string& out, Major major, const char* data, std::size_t size,
                   std::vector<Ref>* refs) {
  append_head(out, major, size);
  if (refs != nullptr && size >= kRefBytes) {
    refs->push_back({out.size(), data, size});
  } else {
    out.append(data, size);
  }
}

}  // namespace

void append_text(std::string& out, std::string_view text) {
  append_string(out, Major::text_string, text.data(), text.size(), nullptr);
}

void append(std::string& out, const Json& value, std::vector<Ref>* refs) {
  switch (value.type()) {
    case Json::value_t::null:
    case Json::value_t::discarded:
      out.push_back(static_cast<char>(0xf6));
      break;
    case Json::value_t::boolean:
      out.push_back(static_cast<char>(value.get<bool>() ? 0xf5 : 0xf4));
      break;
    case Json::value_t::number_integer: {
      auto n = value.get<std::int64_t>();
      if (n >= 0) {
        append_head(out, Major::unsigned_integer, static_cast<std::uint64_t>(n));
      } else {
        append_head(out, Major::negative_integer, static_cast<std::uint64_t>(-(n + 1)));
      }
      break;
    }
    case Json::value_t::number_unsigned:
      append_head(out, Major::unsigned_integer, value.get<std::uint64_t>());
      break;
    case Json::value_t::number_float: {
      out.push_back(static_cast<char>(0xfb));
      auto bits = std::bit_cast<std::uint64_t>(value.get<double>());
      for (int shift = 56; shift >= 0; shift -= 8)
        out.push_back(static_cast<char>((bits >> shift) & 0xff));
      break;
    }
    case Json::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      append_string(out, Major::text_string, text.data(), text.size(), refs);
      break;
    }
    case Json::value_t::binary: {
      const Json::binary_t& bytes = value.get_binary();
      if (bytes.has_subtype()) append_head(out, Major::tag, bytes.subtype());
      append_string(out, Major::byte_string, reinterpret_cast<const char*>(bytes.data()),
                    bytes.size(), refs);
      break;
    }
    case Json::value_t::array:
      append_head(out, Major::array, value.size());
      for (const Json& item : value) append(out, item, refs);
      break;
    case Json::value_t::object:
      append_head(out, Major::map, value.size());
      for (const auto& [key, item] : value.get_ref<const Json::object_t&>()) {
        append_text(out, key);
        append(out, item, refs);
      }
      break;
  }
}

Json decode(const char* data, std::size_t size) {
  Reader reader(data, size);
  Json value = reader.item(0);
  if (!reader.at_end()) fail("bytes left after the item", reader.offset());
  return value;
}

}  // namespace kiln::internal::cbor
