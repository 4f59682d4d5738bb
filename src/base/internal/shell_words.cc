#include "internal/shell_words.h"

#include <fmt/format.h>

#include "kiln/error.h"

namespace kiln::internal {

std::vector<std::string> split_shell_words(std::string_view text, std::string_view what) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\') {
      if (++i == text.size()) {
        throw InvalidArgument(fmt::format("{}: a trailing backslash in '{}'", what, text));
      }
      word.push_back(text[i]);
    } else if (c == '\'' || c == '"') {
      size_t close = i + 1;
      for (; close < text.size() && text[close] != c; ++close) {
        if (c == '"' && text[close] == '\\' && close + 1 < text.size()) {
          char next = text[close + 1];
          if (next == '"' || next == '\\' || next == '$' || next == '`') ++close;
        }
        word.push_back(text[close]);
      }
      if (close == text.size()) {
        throw InvalidArgument(fmt::format("{}: an unterminated {} quote in '{}'", what,
                                          c == '\'' ? "single" : "double", text));
      }
      i = close;
    } else {
      word.push_back(c);
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace kiln::internal
