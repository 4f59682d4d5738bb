// Finding executables and telling file names from inline source, as tvm.support.utils does.
//
//   std::optional<std::filesystem::path> gcc = kiln::which("gcc");   // e.g. "/usr/bin/gcc"
//   kiln::is_source_path("kernel.cu");                                // true: has an extension
//   kiln::is_source_path("int main() { return 0; }\n");               // false: inline code
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

namespace kiln {

// The first of `name` itself, /bin/<name>, then <dir>/<name> for each $PATH entry that is a
// regular file the current user may execute; std::nullopt when there is none.
std::optional<std::filesystem::path> which(std::string_view name);

// True when `text` names an existing file; otherwise false if it contains a newline; otherwise
// true exactly when it has an extension (the text after its last '.') that neither starts nor
// ends with whitespace.
bool is_source_path(std::string_view text);

}  // namespace kiln
