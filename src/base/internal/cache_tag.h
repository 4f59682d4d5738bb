// Whether a directory is kiln's cache to fill: one kiln made, or took on while it was empty, holds
// kiln's CACHEDIR.TAG (the Cache Directory Tagging convention, https://bford.info/cachedir/, so
// that backup tools skip it too). A directory of the user's that KILN_CACHE_DIR happens to name
// (their home, a project, /) is never changed: not its mode, not its files.
//
//   bool created = ::mkdir(dir.c_str(), 0700) == 0;
//   internal::UniqueFd fd = ...;                          // dir, opened and checked
//   internal::claim_cache_directory(fd.get(), dir, created);   // or UnusableDirectory
#pragma once

#include <filesystem>
#include <string_view>

namespace kiln::internal {

inline constexpr const char* kCacheTagFile = "CACHEDIR.TAG";

// Returns when the directory open as `dir_fd` (named `dir` in messages) is kiln's cache: kiln
// just `created` it, or it holds kiln's tag, or it is empty or holds only what kiln keeps in a
// cache (a cache of a kiln from before the tag); in those cases without the tag, writes it.
// Otherwise throws UnusableDirectory naming the directory, its mode, a few of its files and the
// fix, and leaves the directory exactly as it was.
void claim_cache_directory(int dir_fd, const std::filesystem::path& dir, bool created);

// Whether `name` is one kiln gives a file or directory at the top of its cache: an entry (32 hex
// digits), a temporary file, the counters and their lock, the identities memo, the servers'
// directory, the remote level's fault memory, the tag.
bool is_cache_file_name(std::string_view name);

}  // namespace kiln::internal
