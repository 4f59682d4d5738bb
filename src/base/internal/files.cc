#include "internal/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/random.h>

#include <atomic>
#include <charconv>
#include <cstring>
#include <ctime>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "internal/fd.h"
#include "kiln/error.h"

namespace kiln::internal {

namespace fs = std::filesystem;

namespace {

// Opens `path` for writing with `flags` added, writes all of `bytes` and closes it. Throws
// SystemError("write '<name>'", errno), where `name` is the path the caller asked for.
void write_to(const fs::path& path, int flags, std::string_view bytes, const fs::path& name) {
  const std::string operation = fmt::format("write '{}'", name.string());
  UniqueFd fd(
      retry_eintr([&] { return ::open(path.c_str(), O_WRONLY | O_CLOEXEC | flags, 0666); }));
  if (!fd) throw SystemError(operation, errno);
  while (!bytes.empty()) {
    ssize_t n = retry_eintr([&] { return ::write(fd.get(), bytes.data(), bytes.size()); });
    if (n < 0) throw SystemError(operation, errno);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  // close() reports late write errors (NFS, quotas); it is never retried (see retry_eintr).
  if (::close(fd.release()) != 0 && errno != EINTR) throw SystemError(operation, errno);
}

}  // namespace

std::string temporary_name() {
  std::uint64_t random = 0;
  if (::getrandom(&random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
    // No entropy to be had: still unique in this process, and O_EXCL catches the rest.
    static std::atomic<std::uint64_t> counter{0};
    random = (static_cast<std::uint64_t>(::time(nullptr)) << 20) ^ counter.fetch_add(1);
  }
  return fmt::format("{}{}-{:016x}", kTemporaryPrefix, ::getpid(), random);
}

std::optional<long> temporary_writer(std::string_view name) {
  if (!name.starts_with(kTemporaryPrefix)) return std::nullopt;
  name.remove_prefix(kTemporaryPrefix.size());
  long pid = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc() || pid <= 0 || end == name.data() + name.size() || *end != '-') {
    return std::nullopt;
  }
  return pid;
}

UniqueFd open_directory(const fs::path& dir, std::string_view operation) {
  const fs::path& path = dir.empty() ? fs::path(".") : dir;
  UniqueFd fd(
      retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); }));
  if (!fd) throw SystemError(fmt::format("{} '{}'", operation, dir.string()), errno);
  return fd;
}

namespace {

// What kind of thing other than a regular file `st` describes, or nullptr for a regular file,
// a directory or a symbolic link (which a rename replaces without harm to anything else).
const char* special_kind(const struct stat& st) {
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return nullptr;
}

// An output is renamed into place, which would turn a device, FIFO or socket at its name (as
// root, /dev/null) into a regular file: refuse instead, naming what is there.
void refuse_to_replace_special(int dir_fd, const std::string& name, const fs::path& shown) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (const char* kind = special_kind(st)) {
    throw InvalidArgument(fmt::format(
        "write '{}': it is {}, not a file; kiln replaces its outputs whole and will not replace "
        "that: name a file",
        shown.string(), kind));
  }
}

// Creates a new temporary file in `dir_fd`, lets `fill` write it, and renames it to `name` there;
// removes it on any failure. `shown` names the destination in messages.
void place_at(int dir_fd, const std::string& name, const fs::path& shown,
              const std::function<void(int fd, const std::string& operation)>& fill) {
  const std::string operation = fmt::format("write '{}'", shown.string());
  refuse_to_replace_special(dir_fd, name, shown);
  std::string temp;
  UniqueFd fd;
  for (int attempt = 0; attempt < 8 && !fd; ++attempt) {  // EEXIST: someone guessed the name
    temp = temporary_name();
    fd.reset(retry_eintr([&] {
      return ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      0666);
    }));
    if (!fd && errno != EEXIST) break;
  }
  if (!fd) throw SystemError(operation, errno);
  try {
    fill(fd.get(), operation);
    // close() reports late write errors (NFS, quotas); it is never retried (see retry_eintr).
    if (::close(fd.release()) != 0 && errno != EINTR) throw SystemError(operation, errno);
    if (::renameat(dir_fd, temp.c_str(), dir_fd, name.c_str()) != 0) {
      throw SystemError(operation, errno);  // the temporary name would only puzzle the user
    }
  } catch (...) {
    (void)::unlinkat(dir_fd, temp.c_str(), 0);
    throw;
  }
}

void write_all(int fd, std::string_view bytes, const std::string& operation) {
  while (!bytes.empty()) {
    ssize_t n = retry_eintr([&] { return ::write(fd, bytes.data(), bytes.size()); });
    if (n < 0) throw SystemError(operation, errno);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// Copies what is left to read of `from` into `to`.
void copy_all(int from, int to, const fs::path& source, const std::string& operation) {
  std::vector<char> buffer(std::size_t{1} << 16);
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::read(from, buffer.data(), buffer.size()); });
    if (n < 0) throw SystemError(fmt::format("read '{}'", source.string()), errno);
    if (n == 0) return;
    write_all(to, std::string_view(buffer.data(), static_cast<size_t>(n)), operation);
  }
}

}  // namespace

void move_into_place(const fs::path& from, const fs::path& to) {
  refuse_to_replace_special(AT_FDCWD, to.string(), to);
  if (::rename(from.c_str(), to.c_str()) == 0) return;
  if (errno != EXDEV) {
    throw SystemError(fmt::format("write '{}'", to.string()), errno);  // `from` is kiln's own
  }
  UniqueFd source(
      retry_eintr([&] { return ::open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC); }));
  struct stat st {};
  if (!source || ::fstat(source.get(), &st) != 0) {
    throw SystemError(fmt::format("copy '{}' to '{}'", from.string(), to.string()), errno);
  }
  UniqueFd dir = open_directory(to.parent_path(), "write into");
  place_at(dir.get(), to.filename().string(), to, [&](int fd, const std::string& operation) {
    copy_all(source.get(), fd, from, operation);
    if (::fchmod(fd, st.st_mode & 07777) != 0) throw SystemError(operation, errno);
  });
  (void)::unlink(from.c_str());  // a move: the source goes once the copy is in place
}

void write_file_atomically_at(int dir_fd, const std::string& name, std::string_view bytes,
                              std::optional<unsigned> mode, const fs::path& shown) {
  place_at(dir_fd, name, shown, [&](int fd, const std::string& operation) {
    write_all(fd, bytes, operation);
    if (mode && ::fchmod(fd, *mode) != 0) {
      throw SystemError(fmt::format("chmod '{}'", shown.string()), errno);
    }
  });
}

void write_file_atomically(const fs::path& path, std::string_view bytes,
                           std::optional<unsigned> mode) {
  UniqueFd dir;
  try {
    dir = open_directory(path.parent_path());
  } catch (const SystemError& e) {
    throw SystemError(fmt::format("write '{}'", path.string()), e.error_number());
  }
  write_file_atomically_at(dir.get(), path.filename().string(), bytes, mode, path);
}

void write_file(const fs::path& path, std::string_view bytes) {
  write_to(path, O_CREAT | O_TRUNC, bytes, path);
}

namespace {
std::atomic<ReadObserver> read_observer{nullptr};
}  // namespace

void observe_reads(ReadObserver observer) noexcept { read_observer.store(observer); }

std::string read_file(const fs::path& path, std::string_view missing) {
  if (ReadObserver observer = read_observer.load(std::memory_order_relaxed)) observer(path);
  // The message keeps the caller's words for what is missing and adds what the system said, so
  // "cannot read manifest 'x'" says whether x is absent, a directory or unreadable.
  auto cannot = [&](int error) {
    return FileNotFound(fmt::format("{} '{}': {}", missing, path.string(), std::strerror(error)));
  };
  UniqueFd fd(retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }));
  if (!fd) throw cannot(errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw cannot(errno);
  if (S_ISDIR(st.st_mode)) throw cannot(EISDIR);
  std::string bytes;
  char buffer[65536];
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::read(fd.get(), buffer, sizeof buffer); });
    if (n < 0) throw SystemError(fmt::format("read '{}'", path.string()), errno);
    if (n == 0) return bytes;
    bytes.append(buffer, static_cast<size_t>(n));
  }
}

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool is_dir(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

}  // namespace kiln::internal
