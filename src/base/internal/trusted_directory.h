// Whether a directory kiln writes into (the cache, a build's --out) is one that only this user
// (and root) can change, the way ssh's StrictModes judges ~/.ssh: otherwise whoever else can
// write it, or one of its ancestors, could plant or swap the files kiln reads back or writes.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <string>

namespace kiln::internal {

// Why another user could change the entries of a directory with status `st`, for a message
// ("belongs to uid 1001", "is writable by everyone (mode 0777)"), or std::nullopt when only this
// user or root can: owned by root or the effective user, and not writable by group or others,
// unless the sticky bit is set (like /tmp: nobody can rename or remove another's entries) or the
// group is this user's own private group (a umask 002 system).
std::optional<std::string> why_others_can_write(const struct stat& st);

struct UntrustedDirectory {
  std::filesystem::path path;  // the directory at fault
  std::string why;             // what why_others_can_write() said
};

// Checks `dir`'s ancestors from / down (symlinks resolved, as the kernel would follow them) and,
// when `and_itself`, `dir` too. Returns the first one another user could change. Throws
// SystemError when one cannot be resolved or examined (missing, or not searchable).
std::optional<UntrustedDirectory> find_untrusted_directory(const std::filesystem::path& dir,
                                                           bool and_itself);

}  // namespace kiln::internal
