// Files in and out: every file kiln writes goes through here. Its own outputs (a library, a
// cubin, a cache entry) are written whole or not at all (write_file_atomically); scratch files in
// a temporary directory are written in place but still checked (write_file).
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
// file and throws SystemError naming `path` and errno's text.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           std::optional<unsigned> mode = std::nullopt);

// Creates or truncates `path` and writes `bytes` to it in place (for scratch files nobody else
// reads half-written, like a compiler's input in a temporary directory). Throws SystemError
// naming `path` and errno's text when it cannot be opened, written or closed.
void write_file(const std::filesystem::path& path, std::string_view bytes);

// The whole file; throws FileNotFound("<missing> '<path>': <errno text>") when it cannot be
// opened or is a directory, and SystemError when reading fails, so a caller
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
