// Text from outside kiln (a compiler's log, a path, an archive member's name) made safe to show:
// valid UTF-8 for JSON reports, and free of control characters for a terminal.
//
//   kiln::valid_utf8("caf\xe9");             // "caf\uFFFD": invalid bytes become U+FFFD
//   kiln::utf8_prefix("\xc3\xa9t\xc3\xa9", 4);  // "\xc3\xa9t": never cuts a character in two
//   kiln::printable("a\x1b[2Jb");           // "a\\x1b[2Jb": an escape sequence cannot act
//   kiln::json_text(nlohmann::json{{"log", "caf\xe9"}}, 2);  // dumps, never throws
//
// File names and tool output are bytes, not text: a Latin-1 name or a log cut in the middle of a
// character is not valid UTF-8, which JSON requires, and a name holding ESC can drive the
// terminal it is printed on. Everything kiln prints or reports from outside goes through here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kiln {

// `text` with each byte that is not part of a well-formed UTF-8 character (stray continuation
// bytes, truncated or overlong sequences, surrogates, code points above U+10FFFF) replaced by
// U+FFFD; valid text is returned unchanged.
std::string valid_utf8(std::string_view text);

// The longest prefix of `text` of at most `max_bytes` bytes that does not end inside a UTF-8
// character (a cut before a lead byte); bytes that are not UTF-8 count as characters of their own.
std::string_view utf8_prefix(std::string_view text, size_t max_bytes);

// `text` for a message on a terminal: control characters (C0, DEL, C1), tabs and newlines
// included, and bytes that are not valid UTF-8 are written as "\xNN"; printable UTF-8 is kept.
std::string printable(std::string_view text);
// printable(), keeping newlines and tabs: a message of several lines (a compiler's output) as
// lines, with no escape sequence or carriage return left to act on the terminal.
std::string printable_lines(std::string_view text);

// `value` as JSON text (`indent` < 0: one line), with invalid UTF-8 in its strings replaced by
// U+FFFD instead of throwing, so a report can always be written.
std::string json_text(const nlohmann::json& value, int indent = -1);

// `text` without the spaces, tabs, carriage returns and newlines at its ends.
std::string_view trimmed(std::string_view text);

// The last `count` non-empty lines of `text` that hold one of `needles` (all of them when
// `needles` is empty), joined with newlines: the lines of a tool's log that say why.
std::string last_lines(std::string_view text, const std::vector<std::string_view>& needles,
                       size_t count);

}  // namespace kiln
