// The base directory a cache keys paths relative to, and the pin line of its entries: an entry
// whose bytes name the base directory's absolute path (a __FILE__, debug information) is stored
// as "<base>\n<bytes>" and served only under that base; any other as "\n<bytes>".
#pragma once

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::internal {

// `given`, else $KILN_BASE_DIR, else the working directory: absolute and lexically normal,
// without a trailing slash; "" (no relocation) for the root or a name with a newline.
std::filesystem::path base_directory_of(const std::filesystem::path& given);

// A directory a key names by a placeholder wherever it occurs: {"/tmp/kiln-x1/job", "$WORK"}.
struct NamedDirectory {
  std::string_view path;  // "" names nothing
  std::string_view name;
};

// `text` as a key holds it (Cache::relocated): every literal '$' doubled, so that no text the
// user wrote ("-DWHERE=\"$BASE/data\"") can read like a placeholder; each of `dirs` replaced by
// its name wherever it occurs (the first listed wins where two start at one place); then `base`,
// where it is a whole path (the text before it ends a path or is an option such as -I, the text
// after it starts a new component or ends the path), replaced by "$BASE". One pass over `text`:
// what one substitution wrote is never read by another. `base` shorter than 2 characters ("",
// "/") relocates nothing.
std::string relocated_text(std::string_view text, const std::filesystem::path& base,
                           std::initializer_list<NamedDirectory> dirs = {});

// The entry's bytes as stored: its pin line (the base when the bytes name it, else ""), then
// the bytes.
std::string pinned_payload(std::string_view bytes, const std::filesystem::path& base);

// The bytes of a payload pinned to no base or to `base`; std::nullopt otherwise.
std::optional<std::string> unpinned_bytes(std::string payload, const std::filesystem::path& base);

}  // namespace kiln::internal
