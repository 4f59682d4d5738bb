// Writing to a path the user named (a report's --json/--trace FILE), as opposed to kiln's own
// outputs: what is there already is written through, never replaced.
#pragma once

#include <filesystem>
#include <string_view>

namespace kiln::internal {

// Writes `bytes` to the path a user named:
//   "-"                          standard output;
//   a symbolic link              the file it leads to, opened and truncated (created if missing),
//                                so the link stays a link;
//   anything else already there  (a device such as /dev/null, a FIFO, a socket) opened and
//                                written, so it keeps its type;
//   a regular file, or nothing   written whole or not at all (write_file_atomically).
// Throws SystemError naming `path` and errno's text ("write '/dev/full': No space left on
// device"); a FIFO blocks until a reader opens it.
void write_named_output(const std::filesystem::path& path, std::string_view bytes);

}  // namespace kiln::internal
