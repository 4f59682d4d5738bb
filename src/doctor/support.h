// What the doctor's checks share: running `tool --version` and finding every copy of a tool on
// PATH.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/doctor.h"
#include "kiln/process.h"

namespace kiln::doctor::detail {

std::string first_line(const std::string& text);

// `program --version` (20 s at most); std::nullopt when it cannot be started.
std::optional<RunResult> version_of(const std::string& program);

// The first version number in `program --version`'s output ("clang version 14.0.6" -> {14, 0, 6});
// empty when it cannot run, fails, or names none.
std::vector<int> tool_version(const std::string& program);

// "14.0.6" for {14, 0, 6}.
std::string version_text(const std::vector<int>& version);

// Every executable file named `name` in the $PATH entries, in PATH order (what a build that runs
// `name` meets first is the front). Unlike kiln::which, /bin is not searched first: the doctor
// reports what PATH really selects.
std::vector<std::filesystem::path> all_on_path(std::string_view name);
std::optional<std::filesystem::path> first_on_path(std::string_view name);

// The real file a path names (symlinks resolved), or the path itself when that fails.
std::filesystem::path real_path(const std::filesystem::path& path);

// The worst status among `findings` (pass when empty).
Status worst(const std::vector<Finding>& findings);

}  // namespace kiln::doctor::detail
