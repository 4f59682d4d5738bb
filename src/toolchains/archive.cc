#include "archive.h"

#include <fcntl.h>

#include <cerrno>

#include <fmt/format.h>

#include "kiln/error.h"

namespace kiln::internal {

std::string archive_error(archive* a) {
  const char* text = archive_error_string(a);
  return text != nullptr ? text : "unknown libarchive error";
}

UniqueFd open_input(const std::filesystem::path& path, std::string_view what) {
  UniqueFd fd(retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }));
  if (fd) return fd;
  int error = errno;
  if (error == ENOENT) {
    throw FileNotFound(fmt::format("{} '{}' does not exist", what, path.string()));
  }
  throw SystemError(fmt::format("open '{}'", path.string()), error);
}

}  // namespace kiln::internal
