// Pieces tar.cc and untar.cc share: libarchive's error text and opening an input file.
#pragma once

#include <archive.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "internal/fd.h"

namespace kiln::internal {

// libarchive's block size for reads and writes.
inline constexpr size_t kArchiveBlock = size_t{64} * 1024;

// The last error libarchive recorded on `a`, or a placeholder when it has none.
std::string archive_error(archive* a);

// Opens an existing file read-only and close-on-exec; a missing one is FileNotFound
// ("<what> '<path>' does not exist"), any other failure SystemError.
UniqueFd open_input(const std::filesystem::path& path, std::string_view what);

}  // namespace kiln::internal
