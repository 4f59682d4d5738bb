// with_io_description(): the one edit compile_coreml makes to a Core ML model, on the protobuf
// wire format directly (kiln has no protobuf dependency, and one string field is all it writes).
//
// A .mlmodel is a serialized CoreML.Specification.Model: description (2) is a ModelDescription
// whose input (1) and output (10) are FeatureDescriptions named by their field 1, and whose
// metadata (100) is a Metadata with shortDescription as field 1. Every other field is kept byte
// for byte, in its place.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "kiln/error.h"
#include "kiln/xcode.h"

namespace kiln::xcode {
namespace {

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

// A field of a message: views into the message's bytes, which must outlive it.
struct Field {
  std::uint32_t number = 0;
  std::uint32_t wire_type = 0;
  std::string_view record{};   // the whole field: tag and value
  std::string_view payload{};  // for kLength, the bytes inside
};

[[noreturn]] void malformed(std::string_view why) {
  throw InvalidArgument(fmt::format("not a Core ML model (a protobuf Model): {}", why));
}

std::uint64_t read_varint(std::string_view bytes, size_t& at) {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= bytes.size()) malformed("a number runs past the end");
    auto byte = static_cast<unsigned char>(bytes[at++]);
    value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  malformed("a number longer than 10 bytes");
}

// Skips `n` bytes from `at`, refusing to pass the end.
void skip(std::string_view bytes, size_t& at, std::uint64_t n) {
  if (n > bytes.size() - at) malformed("a field runs past the end");
  at += static_cast<size_t>(n);
}

std::vector<Field> parse_fields(std::string_view bytes) {
  std::vector<Field> fields;
  size_t at = 0;
  while (at < bytes.size()) {
    size_t start = at;
    std::uint64_t tag = read_varint(bytes, at);
    Field field{.number = static_cast<std::uint32_t>(tag >> 3),
                .wire_type = static_cast<std::uint32_t>(tag & 7)};
    if (field.number == 0 || (tag >> 3) > 0x1fffffff) malformed("a field numbered 0 or too high");
    switch (field.wire_type) {
      case kVarint:
        read_varint(bytes, at);
        break;
      case kFixed64:
        skip(bytes, at, 8);
        break;
      case kFixed32:
        skip(bytes, at, 4);
        break;
      case kLength: {
        std::uint64_t length = read_varint(bytes, at);
        size_t begin = at;
        skip(bytes, at, length);
        field.payload = bytes.substr(begin, at - begin);
        break;
      }
      default:
        malformed(fmt::format("wire type {} (groups are not used by Core ML)", field.wire_type));
    }
    field.record = bytes.substr(start, at - start);
    fields.push_back(field);
  }
  return fields;
}

void append_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

std::string length_field(std::uint32_t number, std::string_view payload) {
  std::string out;
  append_varint(out, (static_cast<std::uint64_t>(number) << 3) | kLength);
  append_varint(out, payload.size());
  out.append(payload);
  return out;
}

// Protobuf merges repeated occurrences of a message field: their payloads, concatenated.
std::string merged_payload(const std::vector<Field>& fields, std::uint32_t number) {
  std::string merged;
  for (const Field& f : fields) {
    if (f.number == number && f.wire_type == kLength) merged.append(f.payload);
  }
  return merged;
}

// `fields` with every occurrence of message field `number` replaced by one holding `payload`, at
// the first occurrence's place (at the end when there was none).
std::string with_field(const std::vector<Field>& fields, std::uint32_t number,
                       std::string_view payload) {
  std::string out;
  bool placed = false;
  for (const Field& f : fields) {
    if (f.number != number) {
      out.append(f.record);
    } else if (!placed) {
      out += length_field(number, payload);
      placed = true;
    }
  }
  if (!placed) out += length_field(number, payload);
  return out;
}

// The names of the FeatureDescriptions in field `number` of a ModelDescription, in order.
std::vector<std::string> feature_names(const std::vector<Field>& description,
                                       std::uint32_t number) {
  std::vector<std::string> names;
  for (const Field& f : description) {
    if (f.number != number || f.wire_type != kLength) continue;
    std::string name;  // the last occurrence wins, as protobuf reads a string field
    for (const Field& g : parse_fields(f.payload)) {
      if (g.number == 1 && g.wire_type == kLength) name = std::string(g.payload);
    }
    names.push_back(std::move(name));
  }
  return names;
}

// The next code point of UTF-8 text, or InvalidArgument.
char32_t next_code_point(std::string_view text, size_t& at) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(at);
  int extra = -1;  // continuation bytes after the lead
  if (lead < 0x80) {
    extra = 0;
  } else if ((lead & 0xe0) == 0xc0) {
    extra = 1;
  } else if ((lead & 0xf0) == 0xe0) {
    extra = 2;
  } else if ((lead & 0xf8) == 0xf0) {
    extra = 3;
  }
  if (extra < 0 || text.size() - at <= static_cast<size_t>(extra)) {
    malformed("a feature name that is not UTF-8");
  }
  char32_t code = lead & (0x7f >> (extra == 0 ? 0 : extra + 1));
  for (int i = 1; i <= extra; ++i) {
    if ((byte(at + i) & 0xc0) != 0x80) malformed("a feature name that is not UTF-8");
    code = (code << 6) | (byte(at + i) & 0x3f);
  }
  at += extra + 1;
  return code;
}

// `text` as a JSON string the way Python's json.dumps writes it (ensure_ascii: \uXXXX for every
// non-ASCII character, surrogate pairs above U+FFFF).
std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (size_t at = 0; at < text.size();) {
    char32_t c = next_code_point(text, at);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c >= 0x20 && c < 0x7f) {
          out.push_back(static_cast<char>(c));
        } else if (c < 0x10000) {
          out += fmt::format("\\u{:04x}", static_cast<std::uint32_t>(c));
        } else {
          char32_t v = c - 0x10000;
          out += fmt::format("\\u{:04x}\\u{:04x}", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
        }
    }
  }
  return out + "\"";
}

std::string json_list(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : ", ") + json_string(names[i]);
  return out + "]";
}

}  // namespace

std::string coreml_io_description(std::string_view mlmodel) {
  std::string description_bytes = merged_payload(parse_fields(mlmodel), 2);
  std::vector<Field> description = parse_fields(description_bytes);  // views into the bytes
  return fmt::format("{{\"inputs\": {}, \"outputs\": {}}}",
                     json_list(feature_names(description, 1)),
                     json_list(feature_names(description, 10)));
}

std::string with_io_description(std::string_view mlmodel) {
  std::vector<Field> model = parse_fields(mlmodel);
  std::string description_bytes = merged_payload(model, 2);
  std::vector<Field> description = parse_fields(description_bytes);
  std::string metadata_bytes = merged_payload(description, 100);
  std::vector<Field> metadata = parse_fields(metadata_bytes);
  // shortDescription first, as a serializer writes fields in the order of their numbers.
  std::string new_metadata = length_field(1, coreml_io_description(mlmodel));
  for (const Field& f : metadata) {
    if (f.number != 1) new_metadata.append(f.record);
  }
  return with_field(model, 2, with_field(description, 100, new_metadata));
}

}  // namespace kiln::xcode
