// The kiln CLI's subcommands. Each add_* function registers one subcommand on `app`; when the
// user picks it, its callback stores the exit status in `*status`. Errors are thrown as
// kiln::Error and printed by main() as "kiln: error: ...".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace kiln::cli {

// Exit statuses of every kiln command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the requested work failed
inline constexpr int kExitUsage = 2;   // bad command line or bad input description

void add_describe(CLI::App& app, int* status);
void add_tar(CLI::App& app, int* status);
void add_cc(CLI::App& app, int* status);
void add_clang(CLI::App& app, int* status);
void add_cuda(CLI::App& app, int* status);
void add_cache(CLI::App& app, int* status);
void add_rocm(CLI::App& app, int* status);
void add_ndk(CLI::App& app, int* status);
void add_emcc(CLI::App& app, int* status);
void add_doctor(CLI::App& app, int* status);
void add_build(CLI::App& app, int* status);
void add_settings(CLI::App& app, int* status);
void add_templates(CLI::App& app, int* status);

// The arguments after the first "--" on the command line, meant for the compiler
// (`kiln cc shared -o x.so x.c -- -O2`). main() splits them off before parsing.
const std::vector<std::string>& passthrough();
// Moves everything from the first "--" on out of argc/argv into passthrough().
void split_passthrough(int& argc, char** argv);
// For commands that take nothing after "--": throws kiln::InvalidArgument (exit 2) when there was.
void require_no_passthrough(std::string_view command);

}  // namespace kiln::cli
