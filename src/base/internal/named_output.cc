#include "internal/named_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <fmt/format.h>

#include "internal/fd.h"
#include "internal/files.h"
#include "kiln/error.h"

namespace kiln::internal {
namespace {

void write_all(int fd, std::string_view bytes, const std::string& operation) {
  while (!bytes.empty()) {
    ssize_t n = retry_eintr([&] { return ::write(fd, bytes.data(), bytes.size()); });
    if (n < 0) throw SystemError(operation, errno);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// Opens what `path` is or leads to, without replacing it, and writes `bytes` there.
void write_through(const std::filesystem::path& path, std::string_view bytes) {
  const std::string operation = fmt::format("write '{}'", path.string());
  // O_CREAT for a dangling link: the file it names is made, as a shell's `>` would.
  UniqueFd fd(retry_eintr(
      [&] { return ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CREAT | O_CLOEXEC, 0666); }));
  if (!fd) throw SystemError(operation, errno);
  write_all(fd.get(), bytes, operation);
  // close() reports late write errors (NFS, quotas); it is never retried (see retry_eintr).
  if (::close(fd.release()) != 0 && errno != EINTR) throw SystemError(operation, errno);
}

}  // namespace

void write_named_output(const std::filesystem::path& path, std::string_view bytes) {
  if (path == "-") {
    write_all(STDOUT_FILENO, bytes, "write to standard output");
    return;
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A rename over a directory would fail naming kiln's temporary file; say it plainly.
    if (S_ISDIR(st.st_mode)) throw SystemError(fmt::format("write '{}'", path.string()), EISDIR);
    write_through(path, bytes);
    return;
  }
  write_file_atomically(path, bytes);
}

}  // namespace kiln::internal
