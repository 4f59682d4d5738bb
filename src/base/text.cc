#include "kiln/text.h"

#include <cstdint>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kiln {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed UTF-8 character at the start of `text` (1 to 4), or 0 when its
// first byte does not start one (RFC 3629: no overlong forms, no surrogates, <= U+10FFFF).
size_t char_length(std::string_view text) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = lead >= 0xC2 && lead <= 0xDF   ? 2
                  : lead >= 0xE0 && lead <= 0xEF ? 3
                  : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                 : 0;
  if (length == 0 || text.size() < length) return 0;
  // The second byte's range narrows for the leads that could otherwise encode what is not allowed.
  uint8_t low = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
  uint8_t high = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

bool is_continuation(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

// A C1 control (U+0080..U+009F) is encoded as C2 80..C2 9F.
bool is_c1_control(std::string_view character) {
  return character.size() == 2 && static_cast<uint8_t>(character[0]) == 0xC2 &&
         static_cast<uint8_t>(character[1]) < 0xA0;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t length = char_length(text);
    if (length == 0) {
      out += kReplacement;
      length = 1;
    } else {
      out += text.substr(0, length);
    }
    text.remove_prefix(length);
  }
  return out;
}

std::string_view utf8_prefix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  // Back up over at most three continuation bytes to the lead byte of the character cut in two;
  // if that character is complete before the cut, keep it.
  size_t lead = end;
  while (lead > 0 && end - lead < 4 && is_continuation(text[lead])) --lead;
  if (lead < end && char_length(text.substr(lead)) != 0 &&
      lead + char_length(text.substr(lead)) > end) {
    return text.substr(0, lead);
  }
  return text.substr(0, end);
}

namespace {

std::string escaped(std::string_view text, bool keep_lines) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t length = char_length(text);
    std::string_view character = text.substr(0, length == 0 ? 1 : length);
    auto first = static_cast<uint8_t>(character[0]);
    bool kept = keep_lines && length == 1 && (first == '\n' || first == '\t');
    bool control = length == 1 && (first < 0x20 || first == 0x7F) && !kept;
    if (length == 0 || control || is_c1_control(character)) {
      for (char c : character) out += fmt::format("\\x{:02x}", static_cast<uint8_t>(c));
    } else {
      out += character;
    }
    text.remove_prefix(character.size());
  }
  return out;
}

}  // namespace

std::string printable(std::string_view text) { return escaped(text, false); }

std::string printable_lines(std::string_view text) { return escaped(text, true); }

std::string json_text(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string last_lines(std::string_view text, const std::vector<std::string_view>& needles,
                       size_t count) {
  std::vector<std::string> kept;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    bool wanted = needles.empty();
    for (std::string_view needle : needles) wanted = wanted || line.find(needle) != line.npos;
    if (wanted && !line.empty()) kept.push_back(line);
  }
  size_t first = kept.size() > count ? kept.size() - count : 0;
  std::string joined;
  for (size_t i = first; i < kept.size(); ++i) joined += (joined.empty() ? "" : "\n") + kept[i];
  return joined;
}

std::string_view trimmed(std::string_view text) {
  constexpr std::string_view kBlank = " \t\r\n";
  size_t first = text.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kBlank) - first + 1);
}

}  // namespace kiln
