#include "kiln/tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "archive.h"
#include "internal/fd.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "kiln/text.h"
#include "untar_checks.h"

namespace kiln {
namespace fs = std::filesystem;
namespace {

using internal::UniqueFd;

struct ReadDeleter {
  void operator()(archive* a) const noexcept { archive_read_free(a); }
};
using Reader = std::unique_ptr<archive, ReadDeleter>;

// ---- untar() ----
//
// Members are written by kiln itself, relative to a handle on the target directory: each path is
// resolved by openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, so the kernel refuses any
// resolution that would leave the target or pass through a symbolic link, whatever an earlier
// member or another process left there. The explicit checks before each member exist for their
// clear messages; the kernel's rules are what guarantee that nothing lands outside. No
// process-wide state (umask, working directory) is changed, so threads may extract at once. A
// regular file costs openat2, write, fchmod, futimens and close; the directory of the last
// member stays open for the next.

// Every path opened under the target stays beneath it and follows no symbolic link.
constexpr uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
// No O_NOFOLLOW: a symbolic link as the last component then fails with ELOOP like any other.
constexpr uint64_t kDirectoryFlags = O_PATH | O_DIRECTORY | O_CLOEXEC;
constexpr uint64_t kFileFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
constexpr mode_t kPermissionBits = 0777;

// openat2(dirfd, path) under kResolve: a descriptor, or -1 with errno set. EAGAIN (the kernel
// could not rule out a concurrent rename) is retried like EINTR.
int open_beneath(int dirfd, const char* path, uint64_t flags, mode_t mode = 0) {
  open_how how{.flags = flags, .mode = mode, .resolve = kResolve};
  long fd = 0;
  do {
    fd = ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
  } while (fd == -1 && (errno == EINTR || errno == EAGAIN));
  return static_cast<int>(fd);
}

// A directory member's mode and times, applied once everything inside it was written.
struct DirectoryFixup {
  std::string path{};  // relative to the target; "." for the target itself
  mode_t mode = 0;
  std::optional<std::array<timespec, 2>> times{};
};

// One extraction: the archive being read and the handles of the directory members land in.
struct Extraction {
  fs::path archive_path;
  fs::path directory;
  archive* reader = nullptr;
  UniqueFd root{};            // the target directory (O_PATH)
  UniqueFd parent{};          // the directory of the last member not directly in the target
  std::string parent_path{};  // its path relative to the target
  std::vector<DirectoryFixup> directories{};
  UntarOptions limits{};
  uint64_t members = 0;  // headers read so far
  uint64_t bytes = 0;    // the sizes of the regular files among them
  // What this extraction made, in order (paths relative to the target), so that a refusal for a
  // limit can take it all away again; and the first directory of the target's own path that it
  // had to create, if any.
  std::vector<std::pair<std::string, bool>> created{};  // path, is a directory
  std::optional<fs::path> made_target{};
};

// Where a member goes: its directory relative to the target ("" for the target itself) and its
// name there ("." for the target itself).
struct Place {
  std::string parent{};
  std::string name{};

  std::string path() const { return parent.empty() ? name : parent + "/" + name; }
};

Place place_of(std::string_view member) {
  std::vector<std::string_view> parts = internal::path_components(member);
  Place place{.name = parts.empty() ? "." : std::string(parts.back())};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (i > 0) place.parent += '/';
    place.parent += parts[i];
  }
  return place;
}

// Messages escape member names, link targets and libarchive's text (which may quote them): a
// hostile name must not drive the terminal it is printed on.
[[noreturn]] void refuse(const Extraction& x, std::string_view member, std::string_view reason) {
  throw UnsafeArchiveMember(fmt::format("Tar error: refusing member '{}' of '{}': {}",
                                        printable(member), printable(x.archive_path.string()),
                                        printable(reason)));
}

[[noreturn]] void throw_read_error(const Extraction& x, archive* a, std::string_view member) {
  if (member.empty()) {
    throw ArchiveError(fmt::format("Tar error: reading '{}': {}",
                                   printable(x.archive_path.string()),
                                   printable(internal::archive_error(a))));
  }
  throw ArchiveError(fmt::format("Tar error: extracting member '{}' of '{}': {}", printable(member),
                                 printable(x.archive_path.string()),
                                 printable(internal::archive_error(a))));
}

// A system call on `path` (relative to the target) failed while extracting `member`.
[[noreturn]] void fail(const Extraction& x, std::string_view member, std::string_view operation,
                       std::string_view path, int error) {
  std::string note = error == ENOSYS ? " (untar needs openat2: Linux 5.6 or later)" : "";
  throw SystemError(fmt::format("Tar error: extracting member '{}' of '{}': {} '{}'{}",
                                printable(member), printable(x.archive_path.string()), operation,
                                printable((x.directory / path).string()), note),
                    error);
}

// Gzip, bzip2, xz and zstd in-process; libarchive's other filters would run external programs.
Reader open_reader(const Extraction& x, int fd) {
  Reader reader(archive_read_new());
  if (!reader) throw ArchiveError("Tar error: libarchive could not allocate a reader");
  archive* r = reader.get();
  if (archive_read_support_filter_gzip(r) != ARCHIVE_OK ||
      archive_read_support_filter_bzip2(r) != ARCHIVE_OK ||
      archive_read_support_filter_xz(r) != ARCHIVE_OK ||
      archive_read_support_filter_zstd(r) != ARCHIVE_OK ||
      archive_read_support_format_tar(r) != ARCHIVE_OK ||
      archive_read_open_fd(r, fd, internal::kArchiveBlock) != ARCHIVE_OK) {
    throw_read_error(x, r, {});
  }
  return reader;
}

// ---- untar(): directories beneath the target ----

// For a message only: the first component of `path` that is a symbolic link, if any.
std::optional<std::string> first_symlink(const Extraction& x, std::string_view path) {
  std::string prefix;
  for (std::string_view part : internal::path_components(path)) {
    if (!prefix.empty()) prefix += '/';
    prefix += part;
    struct stat st {};
    if (::fstatat(x.root.get(), prefix.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) break;
    if (S_ISLNK(st.st_mode)) return prefix;
  }
  return std::nullopt;
}

// openat2 failed on the directory `path`: a symbolic link on the way (ELOOP) or a way out
// (EXDEV) is a refusal, anything else a system error.
[[noreturn]] void directory_error(const Extraction& x, std::string_view member,
                                  std::string_view path, int error) {
  if (error == ELOOP || error == EXDEV || error == ENOTDIR) {
    if (std::optional<std::string> link = first_symlink(x, path)) {
      refuse(x, member, fmt::format("'{}' on its path is a symbolic link", *link));
    }
  }
  if (error == ELOOP || error == EXDEV) {
    refuse(x, member, fmt::format("its directory '{}' would lead outside the target", path));
  }
  fail(x, member, "open directory", path, error);
}

// Makes the directories of `path` that are missing, one component at a time from the target
// (mode 0777 less the umask, as mkdir -p does), and returns the last one opened.
UniqueFd make_directories(Extraction& x, std::string_view member, std::string_view path) {
  UniqueFd dir;
  std::string done;
  for (std::string_view part : internal::path_components(path)) {
    int at = dir ? dir.get() : x.root.get();
    std::string name(part);
    done += done.empty() ? name : "/" + name;
    if (::mkdirat(at, name.c_str(), 0777) == 0) {
      x.created.emplace_back(done, true);
    } else if (errno != EEXIST) {
      fail(x, member, "create directory", done, errno);
    }
    UniqueFd next(open_beneath(at, name.c_str(), kDirectoryFlags));
    if (!next) directory_error(x, member, done, errno);
    dir = std::move(next);
  }
  return dir;
}

// The directory `path` (relative to the target, not empty), opened beneath the target without
// following symbolic links; missing directories are made when `create` is set.
UniqueFd open_directory(Extraction& x, std::string_view member, const std::string& path,
                        bool create) {
  UniqueFd dir(open_beneath(x.root.get(), path.c_str(), kDirectoryFlags));
  if (!dir && errno == ENOENT && create) return make_directories(x, member, path);
  if (!dir) directory_error(x, member, path, errno);
  return dir;
}

// The directory a member goes in, made if missing. The last one stays open: members of one
// directory usually follow each other.
int parent_fd(Extraction& x, std::string_view member, const std::string& parent) {
  if (parent.empty()) return x.root.get();
  if (!x.parent || x.parent_path != parent) {
    x.parent = open_directory(x, member, parent, /*create=*/true);
    x.parent_path = parent;
  }
  return x.parent.get();
}

// ---- untar(): limits ----

// Takes away what this extraction made, newest first (a directory only once it is empty), then
// the target directory and its ancestors that the extraction created. Best effort: it runs on the
// way to reporting a failure, and nothing here may hide that failure.
void remove_created(Extraction& x) {
  x.parent.reset();
  for (auto it = x.created.rbegin(); it != x.created.rend(); ++it) {
    Place place = place_of(it->first);
    UniqueFd dir;
    if (!place.parent.empty()) {
      dir.reset(open_beneath(x.root.get(), place.parent.c_str(), kDirectoryFlags));
      if (!dir) continue;
    }
    (void)::unlinkat(dir ? dir.get() : x.root.get(), place.name.c_str(),
                     it->second ? AT_REMOVEDIR : 0);
  }
  if (!x.made_target) return;
  for (fs::path dir = x.directory; !dir.empty() && ::rmdir(dir.c_str()) == 0;
       dir = dir.parent_path()) {
    if (dir == *x.made_target) break;
  }
}

// Refuses the archive once `member` takes it past a limit, leaving nothing of it behind: an
// archive that expands without bound (a gzip bomb, millions of empty members) must not fill the
// disk or the inode table, and a half-extracted tree is no use to anyone.
[[noreturn]] void over_limit(Extraction& x, std::string_view member, std::string_view limit,
                             std::string_view option) {
  remove_created(x);
  throw ArchiveError(fmt::format(
      "Tar error: extracting '{}' into '{}': member '{}' goes past the limit of {} (raise it with "
      "UntarOptions::{} or `kiln tar extract --{}`); nothing of the extraction was kept",
      printable(x.archive_path.string()), printable(x.directory.string()), printable(member), limit,
      option, option == "max_bytes" ? "max-bytes" : "max-members"));
}

// Counts the member and the bytes of its contents (as its header records them, before any is
// written) against the limits.
void check_limits(Extraction& x, archive_entry* entry, std::string_view member) {
  if (++x.members > x.limits.max_members) {
    over_limit(x, member, fmt::format("{} members", x.limits.max_members), "max_members");
  }
  bool is_file =
      archive_entry_hardlink(entry) == nullptr && archive_entry_filetype(entry) == AE_IFREG;
  la_int64_t size = archive_entry_size(entry);
  if (is_file && size > 0) x.bytes += static_cast<uint64_t>(size);
  if (x.bytes > x.limits.max_bytes) {
    over_limit(x, member, fmt::format("{} bytes in all", x.limits.max_bytes), "max_bytes");
  }
}

// ---- untar(): writing members ----

// Removes what is at `place` in `dir` (a non-directory, or an empty directory) without following
// a symbolic link, so that a later member replaces an earlier one of the same name, as tar does.
void remove_existing(Extraction& x, std::string_view member, int dir, const Place& place) {
  if (::unlinkat(dir, place.name.c_str(), 0) == 0) return;
  if (errno != EISDIR) fail(x, member, "remove", place.path(), errno);
  if (::unlinkat(dir, place.name.c_str(), AT_REMOVEDIR) != 0) {
    fail(x, member, "remove directory", place.path(), errno);
  }
  if (x.parent_path == place.path()) x.parent.reset();
}

// Runs `create` (a system call making `place` in `dir`: -1 and errno on failure); when something
// is there already, removes it and runs `create` once more.
template <typename Create>
int create_replacing(Extraction& x, std::string_view member, int dir, const Place& place,
                     std::string_view operation, Create&& create) {
  int result = create();
  if (result == -1 && (errno == EEXIST || errno == ELOOP)) {  // ELOOP: a symbolic link is there
    remove_existing(x, member, dir, place);
    result = create();
  }
  if (result == -1) fail(x, member, operation, place.path(), errno);
  return result;
}

// The member's times for utimensat, or nothing when it records none (a missing access time is
// left alone).
std::optional<std::array<timespec, 2>> times_of(archive_entry* entry) {
  if (!archive_entry_mtime_is_set(entry) && !archive_entry_atime_is_set(entry)) return {};
  std::array<timespec, 2> times{timespec{.tv_sec = 0, .tv_nsec = UTIME_OMIT},
                                timespec{.tv_sec = 0, .tv_nsec = UTIME_OMIT}};
  if (archive_entry_atime_is_set(entry)) {
    times[0] = {.tv_sec = archive_entry_atime(entry), .tv_nsec = archive_entry_atime_nsec(entry)};
  }
  if (archive_entry_mtime_is_set(entry)) {
    times[1] = {.tv_sec = archive_entry_mtime(entry), .tv_nsec = archive_entry_mtime_nsec(entry)};
  }
  return times;
}

// Writes `length` bytes at `offset` of `fd`, however many writes that takes.
void write_at(const Extraction& x, std::string_view member, int fd, const Place& place,
              const char* data, size_t length, la_int64_t offset) {
  while (length > 0) {
    ssize_t n = internal::retry_eintr([&] { return ::pwrite(fd, data, length, offset); });
    if (n < 0) fail(x, member, "write", place.path(), errno);
    data += n;
    length -= static_cast<size_t>(n);
    offset += n;
  }
}

// Writes the member's data blocks at their offsets (a sparse member's holes stay holes).
void write_data(const Extraction& x, std::string_view member, int fd, const Place& place,
                la_int64_t size) {
  la_int64_t end = 0;
  for (;;) {
    const void* block = nullptr;
    size_t length = 0;
    la_int64_t offset = 0;
    int r = archive_read_data_block(x.reader, &block, &length, &offset);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) throw_read_error(x, x.reader, member);
    write_at(x, member, fd, place, static_cast<const char*>(block), length, offset);
    end = offset + static_cast<la_int64_t>(length);
  }
  if (end < size && ::ftruncate(fd, size) != 0) fail(x, member, "truncate", place.path(), errno);
}

// A regular file: created (never through or onto a symbolic link), filled, given exactly the
// member's rwx bits whatever the umask, and its times, all through the one descriptor.
void extract_file(Extraction& x, std::string_view member, const Place& place,
                  archive_entry* entry) {
  int dir = parent_fd(x, member, place.parent);
  mode_t mode = archive_entry_perm(entry) & kPermissionBits;
  UniqueFd fd(create_replacing(x, member, dir, place, "create", [&] {
    return open_beneath(dir, place.name.c_str(), kFileFlags, mode);
  }));
  x.created.emplace_back(place.path(), false);
  write_data(x, member, fd.get(), place, archive_entry_size(entry));
  if (::fchmod(fd.get(), mode) != 0) fail(x, member, "chmod", place.path(), errno);
  std::optional<std::array<timespec, 2>> times = times_of(entry);
  if (times && ::futimens(fd.get(), times->data()) != 0) {
    fail(x, member, "set times of", place.path(), errno);
  }
  if (::close(fd.release()) != 0 && errno != EINTR) fail(x, member, "close", place.path(), errno);
}

// A directory: made with owner rwx so that its members can be written (or kept when one is there
// already); its own mode and times are applied at the end (finish_directories).
void extract_directory(Extraction& x, std::string_view member, const Place& place,
                       archive_entry* entry) {
  mode_t mode = archive_entry_perm(entry) & kPermissionBits;
  if (place.name != ".") {
    int dir = parent_fd(x, member, place.parent);
    if (::mkdirat(dir, place.name.c_str(), mode | S_IRWXU) == 0) {
      x.created.emplace_back(place.path(), true);
    } else {
      if (errno != EEXIST) fail(x, member, "create directory", place.path(), errno);
      struct stat st {};
      if (::fstatat(dir, place.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        fail(x, member, "stat", place.path(), errno);
      }
      if (!S_ISDIR(st.st_mode)) {
        remove_existing(x, member, dir, place);
        if (::mkdirat(dir, place.name.c_str(), mode | S_IRWXU) != 0) {
          fail(x, member, "create directory", place.path(), errno);
        }
        x.created.emplace_back(place.path(), true);
      }
    }
  }
  x.directories.push_back({.path = place.path(), .mode = mode, .times = times_of(entry)});
}

// A symbolic link (its target was checked by check_symlink) and its times.
void extract_symlink(Extraction& x, std::string_view member, const Place& place,
                     archive_entry* entry) {
  int dir = parent_fd(x, member, place.parent);
  const char* target = archive_entry_symlink(entry);
  create_replacing(x, member, dir, place, "create symbolic link",
                   [&] { return ::symlinkat(target, dir, place.name.c_str()); });
  x.created.emplace_back(place.path(), false);
  std::optional<std::array<timespec, 2>> times = times_of(entry);
  if (times && ::utimensat(dir, place.name.c_str(), times->data(), AT_SYMLINK_NOFOLLOW) != 0) {
    fail(x, member, "set times of", place.path(), errno);
  }
}

// A hard link to `target`, which must be a regular file already inside the target (link(2) of a
// symbolic link would copy the link, whose relative target means something else here).
void extract_hardlink(Extraction& x, std::string_view member, const Place& place,
                      std::string_view target) {
  Place source = place_of(target);
  UniqueFd source_parent;
  if (!source.parent.empty()) source_parent = open_directory(x, member, source.parent, false);
  int from = source_parent ? source_parent.get() : x.root.get();
  struct stat st {};
  if (::fstatat(from, source.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    fail(x, member, "hard link to", source.path(), errno);
  }
  if (!S_ISREG(st.st_mode)) {
    refuse(x, member, fmt::format("hard link to '{}', which is not a regular file", target));
  }
  if (source.path() == place.path()) return;  // a link to itself: the file is there already
  int dir = parent_fd(x, member, place.parent);
  create_replacing(x, member, dir, place, "create hard link",
                   [&] { return ::linkat(from, source.name.c_str(), dir, place.name.c_str(), 0); });
  x.created.emplace_back(place.path(), false);
}

// Checks the member, then writes it beneath the target directory.
void extract_member(Extraction& x, archive_entry* entry) {
  const char* raw_name = archive_entry_pathname(entry);
  if (raw_name == nullptr) refuse(x, "?", "the member's name cannot be decoded");
  std::string member = raw_name;
  if (std::optional<std::string> why = internal::unsafe_member_reason(entry, member)) {
    refuse(x, member, *why);
  }
  check_limits(x, entry, member);
  Place place = place_of(member);
  if (const char* hardlink = archive_entry_hardlink(entry)) {
    extract_hardlink(x, member, place, hardlink);
  } else if (archive_entry_filetype(entry) == AE_IFDIR) {
    extract_directory(x, member, place, entry);
  } else if (archive_entry_filetype(entry) == AE_IFLNK) {
    extract_symlink(x, member, place, entry);
  } else {
    extract_file(x, member, place, entry);
  }
}

// Applies the directory members' modes and times, deepest first (a directory left without
// search permission must not hide its subdirectories) and the target itself last. A directory
// a later member replaced is skipped.
void finish_directories(Extraction& x) {
  std::stable_sort(x.directories.begin(), x.directories.end(),
                   [](const DirectoryFixup& a, const DirectoryFixup& b) {
                     if (a.path == "." || b.path == ".") return b.path == "." && a.path != ".";
                     return a.path > b.path;
                   });
  for (const DirectoryFixup& d : x.directories) {
    UniqueFd fd(open_beneath(x.root.get(), d.path.c_str(),
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)) continue;
    if (!fd) fail(x, d.path, "open directory", d.path, errno);
    if (::fchmod(fd.get(), d.mode) != 0) fail(x, d.path, "chmod", d.path, errno);
    if (d.times && ::futimens(fd.get(), d.times->data()) != 0) {
      fail(x, d.path, "set times of", d.path, errno);
    }
  }
}

// The target directory, created if missing, as the handle every member is resolved beneath;
// `made` is set to the first directory of its path that had to be created.
UniqueFd open_target(const fs::path& directory, std::optional<fs::path>& made) {
  auto open = [&] {
    return internal::retry_eintr(
        [&] { return ::open(directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC); });
  };
  UniqueFd fd(open());
  if (!fd && errno == ENOENT) {
    std::error_code ec;
    for (fs::path dir = directory; !dir.empty() && !fs::exists(dir, ec); dir = dir.parent_path()) {
      made = dir;
    }
    fs::create_directories(directory, ec);
    if (ec) throw SystemError(fmt::format("create directory '{}'", directory.string()), ec.value());
    fd.reset(open());
  }
  if (!fd) throw SystemError(fmt::format("open directory '{}'", directory.string()), errno);
  return fd;
}

// The archive, open for reading. A directory opens fine and fails only at the first read, where
// libarchive can say no more than "Error reading fd 3": it is refused here, by name.
UniqueFd open_archive(const fs::path& path) {
  UniqueFd fd = internal::open_input(path, "tar: archive");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    throw SystemError(fmt::format("stat '{}'", path.string()), errno);
  }
  if (S_ISDIR(st.st_mode)) {
    throw SystemError(fmt::format("tar: archive '{}'", path.string()), EISDIR);
  }
  return fd;
}

}  // namespace

void untar(const fs::path& archive_path, const fs::path& directory, const UntarOptions& options) {
  UniqueFd fd = open_archive(archive_path);
  Extraction x{.archive_path = archive_path, .directory = directory, .limits = options};
  x.root = open_target(directory, x.made_target);
  Reader reader = open_reader(x, fd.get());
  x.reader = reader.get();
  for (;;) {
    archive_entry* entry = nullptr;
    int r = archive_read_next_header(x.reader, &entry);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) throw_read_error(x, x.reader, {});
    extract_member(x, entry);
  }
  finish_directories(x);
}

}  // namespace kiln
