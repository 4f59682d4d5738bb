// without_diagnostics(): NVRTC's log, less the diagnostics that are not the user's business.
#include <algorithm>
#include <string>
#include <string_view>

#include "backends.h"
#include "kiln/text.h"

namespace kiln::cuda::internal {

std::string without_diagnostics(std::string_view log,
                                const std::function<bool(std::string_view)>& drop) {
  std::string kept;
  bool skipping = false;
  bool warnings = false;
  size_t begin = 0;
  while (begin < log.size()) {
    size_t end = log.find('\n', begin);
    end = end == std::string_view::npos ? log.size() : end + 1;
    std::string_view line = log.substr(begin, end - begin);
    begin = end;
    bool blank = trimmed(line).empty();
    if (!skipping && !blank && drop(line)) {
      skipping = true;  // the diagnostic, then its source line and caret, up to a blank line
    } else if (skipping) {
      skipping = !blank;
    } else {
      kept += line;
      warnings = warnings || line.find("warning") != std::string_view::npos;
    }
  }
  if (!warnings) {  // NVRTC's remark on suppressing warnings was about dropped ones alone
    size_t remark = kept.find("Remark: The warnings can be suppressed");
    if (remark != std::string::npos) {
      size_t end = kept.find('\n', remark);
      kept.erase(remark, end == std::string::npos ? std::string::npos : end - remark + 1);
    }
  }
  size_t first = kept.find_first_not_of('\n');
  if (first == std::string::npos) return {};
  size_t last = kept.find_last_not_of('\n');
  return kept.substr(first, last - first + 1) + "\n";
}

std::string merged_logs(const std::vector<std::string>& logs) {
  std::vector<std::string_view> blocks;
  for (std::string_view log : logs) {
    while (!log.empty()) {
      size_t end = log.find("\n\n");
      std::string_view block = log.substr(0, end);
      log.remove_prefix(end == std::string_view::npos ? log.size() : end + 2);
      if (trimmed(block).empty()) continue;
      if (std::find(blocks.begin(), blocks.end(), block) == blocks.end()) blocks.push_back(block);
    }
  }
  std::string merged;
  for (std::string_view block : blocks) {
    merged += block;
    merged += block.ends_with('\n') ? "\n" : "\n\n";
  }
  return merged;
}

bool is_pch_note(std::string_view line) {
  return line.find("PCH") != std::string_view::npos ||
         line.find("precompiled header") != std::string_view::npos;
}

bool is_toolkit_warning(std::string_view line, const std::vector<std::string>& toolkit_dirs) {
  if (line.find("): warning") == std::string_view::npos) return false;
  for (const std::string& dir : toolkit_dirs) {
    if (line.starts_with(dir + "/")) return true;
  }
  return false;
}

}  // namespace kiln::cuda::internal
