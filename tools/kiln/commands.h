// The kiln CLI's subcommands. Each add_* function registers one subcommand on `app`; when the
// user picks it, its callback stores the exit status in `*status`. Errors are thrown as
// kiln::Error and printed by main() as "kiln: error: ...".
#pragma once

#include <CLI/CLI.hpp>

namespace kiln::cli {

// Exit statuses of every kiln command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the requested work failed
inline constexpr int kExitUsage = 2;   // bad command line or bad input description

void add_describe(CLI::App& app, int* status);

}  // namespace kiln::cli
