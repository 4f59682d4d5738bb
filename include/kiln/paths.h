// Finding executables and telling file names from inline source, as tvm.support.utils does; and
// finding the program kiln::run() will start, which is what a cache key must name.
//
//   std::optional<std::filesystem::path> gcc = kiln::which("gcc");   // e.g. "/usr/bin/gcc"
//   std::filesystem::path runs = kiln::program_path({.argv = {"gcc", "-c", "a.c"}});
//                                                     // the first gcc on PATH:
//                                                     "/usr/local/bin/gcc"
//   kiln::is_source_path("kernel.cu");                                // true: has an extension
//   kiln::is_source_path("int main() { return 0; }\n");               // false: inline code
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string_view>

#include "kiln/process.h"

namespace kiln {

// The first of `name` itself, /bin/<name>, then <dir>/<name> for each $PATH entry that is a
// regular file the current user may execute; std::nullopt when there is none. This is the seed's
// order (tvm.support's which()), for its callers; it is NOT the program run() starts for `name`
// (a ./name or /bin/name comes before PATH here): for that, program_path().
std::optional<std::filesystem::path> which(std::string_view name);

// The absolute path of the program run(options) starts (kiln/process.h): options.argv[0] with a
// '/' is taken as it is (relative to options.cwd); any other name is searched in PATH, as run()
// and execvp do (options.env's PATH when it sets one), never in the working directory first.
// Throws ToolNotFound or ToolNotExecutable as run() would (InvalidArgument for an empty argv).
//
// With `pass_over`, a PATH hit for which it returns true is passed over for the next hit, when
// there is one: a compiler launcher's masquerade link (/usr/lib/ccache/gcc) stands for the real
// compiler after it, which the launcher would run itself (kiln/tool_identities.h).
std::filesystem::path program_path(
    const RunOptions& options,
    const std::function<bool(const std::filesystem::path&)>& pass_over = {});

// True when `text` names an existing file; otherwise false if it contains a newline; otherwise
// true exactly when it has an extension (the text after its last '.') that neither starts nor
// ends with whitespace.
bool is_source_path(std::string_view text);

}  // namespace kiln
