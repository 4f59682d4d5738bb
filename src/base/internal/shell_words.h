// Splitting an option string into words the way a POSIX shell (and Python's shlex.split) would:
// whitespace separates words, single quotes keep everything, double quotes keep everything but
// backslash escapes, a backslash outside quotes escapes the next character. Nothing is expanded
// and nothing is run: this only reads environment variables such as TVM_CUDA_PTXAS_EXTRA_OPTS.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::internal {

// Throws InvalidArgument naming `what` for an unterminated quote or a trailing backslash.
std::vector<std::string> split_shell_words(std::string_view text, std::string_view what);

}  // namespace kiln::internal
