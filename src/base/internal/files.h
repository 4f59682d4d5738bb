// Putting a finished file where it belongs, whole or not at all.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::internal {

// Renames `from` to `to`; across filesystems, copies to a temporary name beside `to` and renames
// that, so `to` never holds a partial file. Throws SystemError.
void move_into_place(const std::filesystem::path& from, const std::filesystem::path& to);

// Writes `bytes` to a temporary file beside `path` (".kiln-tmp-<pid>-<n>-<name>", unique per
// call), gives it `mode` when set, then renames it over `path`; on failure removes the temporary
// file and throws FileNotFound naming `path`.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           std::optional<unsigned> mode = std::nullopt);

// The whole file; throws FileNotFound("<missing> '<path>'") when it cannot be opened, so a caller
// can say what the missing file means ("the compiler wrote no").
std::string read_file(const std::filesystem::path& path, std::string_view missing = "cannot read");

// Whether `path` is a regular file / a directory (following symlinks); false on any error.
bool is_file(const std::filesystem::path& path);
bool is_dir(const std::filesystem::path& path);

// The value of an environment variable, std::nullopt when it is unset or empty.
inline std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read-only use
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

}  // namespace kiln::internal
