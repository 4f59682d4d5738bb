#include "internal/cache_tag.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "internal/fd.h"
#include "internal/files.h"
#include "kiln/error.h"

namespace kiln::internal {
namespace {

namespace fs = std::filesystem;

// The convention's signature line, then who wrote it.
constexpr std::string_view kSignature = "Signature: 8a477f597d28d172789f06886806bc55\n";
constexpr std::string_view kTagText =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by kiln (its compiled-code cache).\n"
    "# For information about cache directory tags, see: https://bford.info/cachedir/\n";

// Whether the directory holds kiln's tag (a regular file, read without blocking).
bool has_kiln_tag(int dir_fd) {
  UniqueFd fd(retry_eintr([&] {
    return ::openat(dir_fd, kCacheTagFile, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  }));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::array<char, 512> text{};
  ssize_t n = retry_eintr([&] { return ::read(fd.get(), text.data(), text.size()); });
  if (n <= 0) return false;
  std::string_view read(text.data(), static_cast<size_t>(n));
  return read.starts_with(kSignature) && read.find("created by kiln") != std::string_view::npos;
}

// The names in the directory that kiln does not make (at most `limit` of them), and whether
// there were more; std::nullopt when it cannot be listed.
struct Foreign {
  std::vector<std::string> names;
  size_t count = 0;
};
std::optional<Foreign> foreign_names(int dir_fd, size_t limit) {
  int own = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (own < 0) return std::nullopt;
  DIR* dir = ::fdopendir(own);
  if (dir == nullptr) {
    ::close(own);
    return std::nullopt;
  }
  Foreign foreign;
  while (const dirent* entry = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe): own stream
    std::string_view name = entry->d_name;
    if (name == "." || name == ".." || is_cache_file_name(name)) continue;
    if (foreign.names.size() < limit) foreign.names.emplace_back(name);
    ++foreign.count;
  }
  ::closedir(dir);  // closes `own`
  return foreign;
}

std::string listed(const Foreign& foreign) {
  std::string text;
  for (const std::string& name : foreign.names) text += (text.empty() ? "" : ", ") + name;
  if (foreign.count > foreign.names.size()) {
    text += fmt::format(" and {} more", foreign.count - foreign.names.size());
  }
  return text;
}

}  // namespace

bool is_cache_file_name(std::string_view name) {
  bool entry = name.size() == 32 &&
               std::all_of(name.begin(), name.end(), [](char c) { return std::isxdigit(c) != 0; });
  return entry || name.starts_with(kTemporaryPrefix) || name.starts_with(".tmp.") ||
         name == "counters" || name == "counters.lock" || name == "identities" ||
         name == "servers" || name == "remote-faults" || name == kCacheTagFile;
}

void claim_cache_directory(int dir_fd, const fs::path& dir, bool created) {
  if (!created) {
    if (has_kiln_tag(dir_fd)) return;
    std::optional<Foreign> foreign = foreign_names(dir_fd, 3);
    if (!foreign) throw SystemError(fmt::format("kiln cache: list {}", dir.string()), errno);
    struct stat tag {};
    // Another kiln may have tagged it since; a tag that is not kiln's is another program's cache.
    if (foreign->count == 0 && ::fstatat(dir_fd, kCacheTagFile, &tag, AT_SYMLINK_NOFOLLOW) == 0) {
      if (has_kiln_tag(dir_fd)) return;
      foreign->names.insert(foreign->names.begin(), "another program's CACHEDIR.TAG");
      foreign->count = 1;
    }
    if (foreign->count != 0) {
      struct stat st {};
      (void)::fstat(dir_fd, &st);
      throw UnusableDirectory(
          dir, fmt::format("kiln cache: {} (mode {:04o}) is a directory kiln did not make: it "
                           "holds {}, and no CACHEDIR.TAG of kiln's; refusing to use it as the "
                           "cache, so that nothing in it is changed or removed; set "
                           "KILN_CACHE_DIR to an empty directory or to a path that does not "
                           "exist yet (kiln creates it, mode 0700)",
                           dir.string(), st.st_mode & 07777, listed(*foreign)));
    }
  }
  try {
    write_file_atomically_at(dir_fd, kCacheTagFile, kTagText, std::nullopt, dir / kCacheTagFile);
  } catch (const Error&) {  // NOLINT(bugprone-empty-catch): untagged, it still holds only kiln's
    // files, and the next open tags it
  }
}

}  // namespace kiln::internal
