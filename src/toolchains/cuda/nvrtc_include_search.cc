// IncludeSearch, pch_inputs() and still_the_same() (nvrtc_pch.h): where NVRTC finds headers,
// and what a precompiled header's prefix may read outside the toolkit.
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <set>

#include "internal/files.h"
#include "kiln/cache.h"
#include "nvrtc_pch.h"

namespace kiln::cuda::internal {
namespace {

namespace fs = std::filesystem;

bool inside(const fs::path& dir, const fs::path& path) {
  fs::path relative = path.lexically_relative(dir);
  return !relative.empty() && *relative.begin() != "..";
}

// Whether anything is at `path` (a file, a directory, a dangling symlink: NVRTC would try it).
bool occupied(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// The directories of -I<dir>, -I <dir>, --include-path=<dir> and --include-path <dir>.
std::vector<std::string> include_dirs_of(const std::vector<std::string>& options) {
  std::vector<std::string> dirs;
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    for (std::string_view flag : {"--include-path", "-I"}) {
      if (!option.starts_with(flag)) continue;
      std::string rest = option.substr(flag.size());
      if (rest.empty() && i + 1 < options.size()) {
        dirs.push_back(options[++i]);
      } else if (flag == "-I" || rest.starts_with("=")) {
        dirs.push_back(flag == "-I" ? rest : rest.substr(1));
      }
      break;
    }
  }
  return dirs;
}

// One header name a line may look for: what is between <> or "" after `at` (spaces skipped),
// and whether it was quoted.
std::optional<std::pair<std::string, bool>> header_name(std::string_view line, size_t at) {
  while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
  if (at >= line.size() || (line[at] != '<' && line[at] != '"')) return std::nullopt;
  char close = line[at] == '<' ? '>' : '"';
  size_t end = line.find(close, at + 1);
  if (end == std::string_view::npos || end == at + 1) return std::nullopt;
  std::string name(line.substr(at + 1, end - at - 1));
  while (!name.empty() && name.back() == ' ') name.pop_back();  // _CCCL_HAS_INCLUDE(<x.h> )
  return std::pair{name, close == '"'};
}

struct Lookup {
  std::string name;
  bool quoted = false;
  bool next = false;  // #include_next: every directory may be the one
};

// Every header `text` may look for: #include, #include_next, and the names given to anything
// spelled *has_include*( (whatever #if surrounds them: a superset of what NVRTC reads).
std::vector<Lookup> lookups(std::string_view text) {
  std::vector<Lookup> found;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = std::min(text.find('\n', begin), text.size());
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    size_t at = line.find_first_not_of(" \t");
    if (at != std::string_view::npos && line[at] == '#') {
      at = line.find_first_not_of(" \t", at + 1);
      std::string_view rest = at == std::string_view::npos ? "" : line.substr(at);
      bool next = rest.starts_with("include_next");
      if (rest.starts_with("include")) {
        if (auto name = header_name(rest, next ? 12 : 7)) {
          found.push_back({name->first, name->second, next});
        }
      }
    }
    std::string lower(line);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (size_t at_probe = lower.find("has_include"); at_probe != std::string::npos;
         at_probe = lower.find("has_include", at_probe + 1)) {
      size_t after = at_probe + 11;
      bool next = lower.compare(after, 5, "_next") == 0;
      after += next ? 5 : 0;
      after = lower.find_first_not_of(" \t", after);
      if (after == std::string::npos || lower[after] != '(') continue;
      if (auto name = header_name(line, after + 1)) {
        found.push_back({name->first, name->second, next});
      }
    }
  }
  return found;
}

}  // namespace

IncludeSearch::IncludeSearch(const std::vector<std::string>& options,
                             const std::vector<fs::path>& toolkit_dirs) {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  for (const std::string& dir : include_dirs_of(options)) {
    fs::path path(dir);
    relative_ = relative_ || path.is_relative();
    dirs_.push_back((path.is_relative() ? cwd / path : path).lexically_normal());
  }
  for (const fs::path& dir : toolkit_dirs) toolkit_.push_back(dir.lexically_normal());
}

std::optional<fs::path> IncludeSearch::find(std::string_view header, const fs::path& beside) const {
  if (!beside.empty() && occupied(beside / header)) return (beside / header).lexically_normal();
  for (const fs::path& dir : dirs_) {
    if (occupied(dir / header)) return (dir / header).lexically_normal();
  }
  return std::nullopt;
}

bool IncludeSearch::from_toolkit(std::string_view header) const {
  std::optional<fs::path> found = find(header);
  return found && in_toolkit(*found);
}

bool IncludeSearch::in_toolkit(const fs::path& file) const {
  fs::path normal = file.lexically_normal();
  return std::any_of(toolkit_.begin(), toolkit_.end(),
                     [&](const fs::path& dir) { return inside(dir, normal); });
}

std::optional<PchInputs> pch_inputs(std::string_view prefix, const IncludeSearch& search) {
  PchInputs inputs;
  std::set<fs::path> seen;
  std::set<fs::path> absent;
  std::deque<std::pair<fs::path, std::string>> todo = {{fs::path(), std::string(prefix)}};
  while (!todo.empty()) {
    auto [file, text] = std::move(todo.front());
    todo.pop_front();
    for (const Lookup& lookup : lookups(text)) {
      std::vector<fs::path> places;
      if (lookup.quoted && !file.empty()) places.push_back(file.parent_path() / lookup.name);
      for (const fs::path& dir : search.dirs()) places.push_back(dir / lookup.name);
      for (fs::path& place : places) {
        place = place.lexically_normal();
        bool there = occupied(place);
        if (!there && !search.in_toolkit(place)) absent.insert(place);
        if (!there) continue;
        if (seen.insert(place).second && kiln::internal::is_file(place)) {
          std::string content;
          try {
            content = kiln::internal::read_file(place);
          } catch (const std::exception&) {
            return std::nullopt;
          }
          if (!search.in_toolkit(place)) inputs.files.emplace_back(place, cache_key({content}));
          todo.emplace_back(place, std::move(content));
        }
        if (!lookup.next) break;
      }
    }
  }
  inputs.absent.assign(absent.begin(), absent.end());
  return inputs;
}

bool still_the_same(const PchInputs& inputs) {
  for (const fs::path& place : inputs.absent) {
    if (occupied(place)) return false;
  }
  for (const auto& [file, digest] : inputs.files) {
    try {
      if (cache_key({kiln::internal::read_file(file)}) != digest) return false;
    } catch (const std::exception&) {
      return false;
    }
  }
  return true;
}

}  // namespace kiln::cuda::internal
