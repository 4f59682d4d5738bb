// The base directory a cache keys paths relative to, and the pin line of its entries: an entry
// whose bytes name the base directory's absolute path (a __FILE__, debug information) is stored
// as "<base>\n<bytes>" and served only under that base; any other as "\n<bytes>".
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::internal {

// `given`, else $KILN_BASE_DIR, else the working directory: absolute and lexically normal,
// without a trailing slash; "" (no relocation) for the root or a name with a newline.
std::filesystem::path base_directory_of(const std::filesystem::path& given);

// The entry's bytes as stored: its pin line (the base when the bytes name it, else ""), then
// the bytes.
std::string pinned_payload(std::string_view bytes, const std::filesystem::path& base);

// The bytes of a payload pinned to no base or to `base`; std::nullopt otherwise.
std::optional<std::string> unpinned_bytes(std::string payload, const std::filesystem::path& base);

}  // namespace kiln::internal
