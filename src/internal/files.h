// Putting a finished file where it belongs, whole or not at all.
#pragma once

#include <filesystem>
#include <string_view>

namespace kiln::internal {

// Renames `from` to `to`; across filesystems, copies to a temporary name beside `to` and renames
// that, so `to` never holds a partial file. Throws SystemError.
void move_into_place(const std::filesystem::path& from, const std::filesystem::path& to);

// Writes `bytes` to a temporary file beside `path`, then renames it over `path`; on failure
// removes the temporary file and throws FileNotFound naming `path`.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace kiln::internal
