// Splitting a PATH-style list: the one place that knows its syntax.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::internal {

// The entries of a ':'-separated list, in order; empty entries are kept as "" (POSIX reads them
// as the current directory; each caller decides what they mean).
inline std::vector<std::string> split_path_list(std::string_view list) {
  std::vector<std::string> entries;
  for (size_t begin = 0; begin <= list.size();) {
    size_t end = list.find(':', begin);
    if (end == std::string_view::npos) end = list.size();
    entries.emplace_back(list.substr(begin, end - begin));
    begin = end + 1;
  }
  return entries;
}

}  // namespace kiln::internal
