#include "internal/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

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

void move_into_place(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (!ec) return;
  if (ec != std::errc::cross_device_link) {
    throw SystemError(fmt::format("rename '{}' to '{}'", from.string(), to.string()), ec.value());
  }
  fs::path staging = to;
  staging += ".kiln-tmp";
  fs::copy_file(from, staging, fs::copy_options::overwrite_existing, ec);
  if (ec) {
    throw SystemError(fmt::format("copy '{}' to '{}'", from.string(), staging.string()),
                      ec.value());
  }
  fs::rename(staging, to, ec);
  if (ec) {
    fs::remove(staging, ec);
    throw SystemError(fmt::format("rename '{}' to '{}'", staging.string(), to.string()),
                      ec.value());
  }
}

void write_file_atomically(const fs::path& path, std::string_view bytes,
                           std::optional<unsigned> mode) {
  static std::atomic<unsigned long> counter{0};
  fs::path temp = path.parent_path() / fmt::format(".kiln-tmp-{}-{}-{}", ::getpid(), counter++,
                                                   path.filename().string());
  try {
    write_to(temp, O_CREAT | O_EXCL, bytes, path);
    if (mode && ::chmod(temp.c_str(), *mode) != 0) {
      throw SystemError(fmt::format("chmod '{}'", path.string()), errno);
    }
    std::error_code ec;
    fs::rename(temp, path, ec);
    if (ec) {
      throw SystemError(fmt::format("rename '{}' to '{}'", temp.string(), path.string()),
                        ec.value());
    }
  } catch (const SystemError&) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw;
  }
}

void write_file(const fs::path& path, std::string_view bytes) {
  write_to(path, O_CREAT | O_TRUNC, bytes, path);
}

std::string read_file(const fs::path& path, std::string_view missing) {
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
