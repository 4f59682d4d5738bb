// Files in and out: every file kiln writes goes through here. Its own outputs (a library, a
// cubin, a cache entry) are written whole or not at all (write_file_atomically); scratch files in
// a temporary directory are written in place but still checked (write_file).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "internal/fd.h"

namespace kiln::internal {

// How every temporary file kiln creates beside a file it writes is named:
// ".kiln-tmp-<pid>-<16 random hex digits>". Unpredictable, so nobody can plant a symlink at the
// name in advance (and it is created O_EXCL|O_NOFOLLOW anyway); the pid says whether its writer
// still runs, so that what a killed writer left can be reaped.
inline constexpr std::string_view kTemporaryPrefix = ".kiln-tmp-";
std::string temporary_name();
// The writer's pid in a name temporary_name() made (or a kiln build's work directory,
// ".kiln-tmp-<pid>-w<n>"); std::nullopt for any other name.
std::optional<long> temporary_writer(std::string_view name);

// Opens directory `dir` (O_DIRECTORY) to create, rename and remove entries relative to it, so
// that swapping a directory on its path meanwhile changes nothing. Throws
// SystemError("<operation> '<dir>'", errno).
UniqueFd open_directory(const std::filesystem::path& dir, std::string_view operation = "open");

// write_file_atomically() of the entry `name` of the directory open as `dir_fd`; `shown` is the
// path messages name.
void write_file_atomically_at(int dir_fd, const std::string& name, std::string_view bytes,
                              std::optional<unsigned> mode, const std::filesystem::path& shown);

// Renames `from` to `to`; across filesystems, copies to a temporary file beside `to` (created like
// write_file_atomically's, never following a symlink) and renames that, so `to` never holds a
// partial file. Throws SystemError.
void move_into_place(const std::filesystem::path& from, const std::filesystem::path& to);

// Writes `bytes` to a new temporary file beside `path` (temporary_name(), created
// O_CREAT|O_EXCL|O_NOFOLLOW relative to the directory's descriptor), gives it `mode` when set,
// then renames it over `path` within that same directory (a symlink at `path` is replaced, never
// followed); on failure removes the temporary file and throws SystemError naming `path` and
// errno's text.
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

// A seam for tests: `observer` (nullptr: none, the default) is called with the path of every
// read_file() from then on, from whichever thread reads. Set it while nothing reads.
using ReadObserver = void (*)(const std::filesystem::path& path);
void observe_reads(ReadObserver observer) noexcept;

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
