// The CBOR (RFC 8949) subset that kiln::Value needs, written for the pool's hot path: values are
// encoded straight into the caller's buffer, and strings and byte strings are decoded with one
// copy each (nlohmann's own reader takes them a byte at a time, which made a 1 MiB argument cost
// ten times its pipe transfer).
//
// Encodes: null, booleans, integers (major types 0 and 1), doubles (always 8 bytes), text,
// byte strings (a subtype as a tag before them), arrays, maps with text keys. Decodes the same,
// plus half and single floats, undefined (as null) and any item in its shortest or longer form;
// refuses indefinite lengths, other tags and simple values, non-text map keys, items nested
// deeper than kMaxDepth, lengths past the end of the input and trailing bytes. The output is
// standard CBOR: nlohmann::json::from_cbor reads it and kiln reads nlohmann's.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::internal::cbor {

inline constexpr int kMaxDepth = 512;

// The contents of a large string left where they are: they belong in the stream just before
// out[at]. Writing them from there (writev) instead of copying them saves a copy per large value.
struct Ref {
  std::size_t at;
  const char* data;
  std::size_t size;
};
// Byte and text strings this long or longer are referenced when the caller asks for refs.
inline constexpr std::size_t kRefBytes = std::size_t{16} * 1024;

// Appends the encoding of `value` to `out`. With `refs`, large strings are recorded there instead
// of being copied; `value` must then outlive the use of `out`.
void append(std::string& out, const nlohmann::json& value, std::vector<Ref>* refs = nullptr);
// Appends the head of an array of `size` items, whose items the caller appends next.
void append_array_head(std::string& out, std::size_t size);
// Appends a text string.
void append_text(std::string& out, std::string_view text);

// The one item that [data, data + size) holds. Throws ProtocolError naming what is wrong.
nlohmann::json decode(const char* data, std::size_t size);

}  // namespace kiln::internal::cbor
