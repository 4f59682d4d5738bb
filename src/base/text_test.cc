#include "kiln/text.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kiln {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

TEST(Text, HeaderExamples) {
  EXPECT_EQ(valid_utf8("caf\xe9"), "caf" + kReplacement);
  EXPECT_EQ(utf8_prefix("\xc3\xa9t\xc3\xa9", 4), "\xc3\xa9t");
  EXPECT_EQ(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(json_text(nlohmann::json{{"log", "caf\xe9"}}, 2),
            "{\n  \"log\": \"caf" + kReplacement + "\"\n}");
}

TEST(Text, ValidUtf8KeepsGoodTextAndReplacesEachBadByte) {
  std::string good = "plain, \xc3\xa9, \xe2\x80\x98quoted\xe2\x80\x99, \xf0\x9f\x94\xa5";
  EXPECT_EQ(valid_utf8(good), good);
  EXPECT_EQ(valid_utf8("\x80"), kReplacement);                     // stray continuation
  EXPECT_EQ(valid_utf8("a\xc3"), "a" + kReplacement);              // cut at the end
  EXPECT_EQ(valid_utf8("\xc0\xaf"), kReplacement + kReplacement);  // overlong '/'
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), kReplacement + kReplacement + kReplacement);  // surrogate
  EXPECT_EQ(valid_utf8("\xf4\x90\x80\x80").size(), 4 * kReplacement.size());          // > U+10FFFF
  EXPECT_EQ(valid_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(Text, Utf8PrefixNeverCutsACharacter) {
  std::string text =
      "ab\xe2\x80\x98"
      "cd";  // 'ab', a 3-byte quote, 'cd'
  EXPECT_EQ(utf8_prefix(text, 100), text);
  EXPECT_EQ(utf8_prefix(text, 2), "ab");
  EXPECT_EQ(utf8_prefix(text, 3), "ab");
  EXPECT_EQ(utf8_prefix(text, 4), "ab");
  EXPECT_EQ(utf8_prefix(text, 5), "ab\xe2\x80\x98");
  EXPECT_EQ(utf8_prefix("\xff\xfe\xfd", 2), "\xff\xfe") << "invalid bytes are characters alone";
  EXPECT_EQ(utf8_prefix("\x80\x80\x80\x80\x80", 3), "\x80\x80\x80");
}

TEST(Text, PrintableEscapesControlsAndBadBytesOnly) {
  EXPECT_EQ(printable("tab\there\nnew"), "tab\\x09here\\x0anew");
  EXPECT_EQ(printable("\x7f"), "\\x7f");
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m"),
            "\\xc2\\x9b31m")
      << "C1 CSI must not reach a terminal";
  EXPECT_EQ(printable("lib\xe9.so"), "lib\\xe9.so");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x80\x98ok\xe2\x80\x99"),
            "caf\xc3\xa9 \xe2\x80\x98ok\xe2\x80\x99");
}

TEST(LastLines, KeepsTheLastMatchingNonEmptyLines) {
  EXPECT_EQ(last_lines("a x\nb\nc x\nd x\n", {"x"}, 2), "c x\nd x");
  EXPECT_EQ(last_lines("a\n\nb\n", {}, 5), "a\nb");
  EXPECT_EQ(last_lines("a\nb\n", {"z"}, 3), "");
}

}  // namespace
}  // namespace kiln
