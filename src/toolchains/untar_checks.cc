#include "untar_checks.h"

#include <sys/stat.h>

#include <algorithm>

#include <fmt/format.h>

namespace kiln::internal {
namespace {

using Reason = std::optional<std::string>;

// Refuses absolute names, ".." components and names that denote the target directory itself
// for anything but a directory.
Reason check_name(std::string_view name, bool is_directory) {
  if (name.empty()) return "the member has no name";
  if (name.front() == '/') return "absolute path";
  std::vector<std::string_view> parts = path_components(name);
  if (std::find(parts.begin(), parts.end(), "..") != parts.end()) {
    return "'..' component in the path";
  }
  if (parts.empty() && !is_directory) return "it names the target directory itself";
  return std::nullopt;
}

// A symbolic link may climb with leading ".." no higher than its own directory's depth and then
// only descend. A ".." after a name is refused: the name may itself be a link (to "." say), so
// such a target cannot be judged from its text. Every link kept this way resolves inside.
Reason check_symlink(std::string_view member, std::string_view target) {
  if (target.empty()) return "symbolic link with an empty target";
  if (target.front() == '/') return fmt::format("symbolic link to the absolute path '{}'", target);
  size_t depth = path_components(member).size() - 1;
  size_t climbs = 0;
  bool descended = false;
  for (std::string_view part : path_components(target)) {
    if (part != "..") {
      descended = true;
    } else if (descended) {
      return fmt::format("symbolic link target '{}' has '..' after a name", target);
    } else if (++climbs > depth) {
      return fmt::format("symbolic link to '{}' leads outside the target", target);
    }
  }
  return std::nullopt;
}

// A hard link must name a path inside the target: relative and without "..". That it names an
// existing regular file is checked on disk when it is made (extract_hardlink).
Reason check_hardlink(std::string_view target) {
  std::vector<std::string_view> parts = path_components(target);
  if (target.empty() || target.front() == '/' || parts.empty() ||
      std::find(parts.begin(), parts.end(), "..") != parts.end()) {
    return fmt::format("hard link to '{}' outside the target", target);
  }
  return std::nullopt;
}

// Only directories, regular files and symbolic links are extracted.
Reason check_type(archive_entry* entry) {
  switch (archive_entry_filetype(entry)) {
    case AE_IFREG:
    case AE_IFDIR:
    case AE_IFLNK:
      return std::nullopt;
    case AE_IFCHR:
      return "character device node";
    case AE_IFBLK:
      return "block device node";
    case AE_IFIFO:
      return "FIFO";
    case AE_IFSOCK:
      return "socket";
    default:
      return fmt::format("unsupported member type {:o}", archive_entry_filetype(entry));
  }
}

}  // namespace

std::vector<std::string_view> path_components(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty() && part != ".") parts.push_back(part);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  return parts;
}

std::optional<std::string> unsafe_member_reason(archive_entry* entry, std::string_view name) {
  const char* hardlink = archive_entry_hardlink(entry);
  bool is_directory = hardlink == nullptr && archive_entry_filetype(entry) == AE_IFDIR;
  if (Reason why = check_name(name, is_directory)) return why;
  if ((archive_entry_mode(entry) & (S_ISUID | S_ISGID)) != 0) return "setuid or setgid bit set";
  if (hardlink != nullptr) return check_hardlink(hardlink);
  if (Reason why = check_type(entry)) return why;
  if (archive_entry_filetype(entry) == AE_IFLNK) {
    const char* target = archive_entry_symlink(entry);
    return check_symlink(name, target != nullptr ? target : "");
  }
  return std::nullopt;
}

}  // namespace kiln::internal
