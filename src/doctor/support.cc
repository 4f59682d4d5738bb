#include "support.h"

#include <unistd.h>

#include <fmt/format.h>

#include "internal/files.h"
#include "internal/path_list.h"
#include "kiln/error.h"

namespace kiln::doctor::detail {

namespace fs = std::filesystem;

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::optional<RunResult> version_of(const std::string& program) {
  try {
    return run({.argv = {program, "--version"}, .timeout = std::chrono::seconds(20)});
  } catch (const CannotRunTool&) {
    return std::nullopt;
  }
}

std::vector<int> tool_version(const std::string& program) {
  std::optional<RunResult> result = version_of(program);
  if (!result || !result->ok()) return {};
  return parse_version(result->output);
}

std::string version_text(const std::vector<int>& version) {
  if (version.empty()) return "unknown";
  return fmt::format("{}.{}.{}", version[0], version.size() > 1 ? version[1] : 0,
                     version.size() > 2 ? version[2] : 0);
}

std::vector<fs::path> all_on_path(std::string_view name) {
  std::vector<fs::path> found;
  std::optional<std::string> path = internal::env("PATH");
  if (!path) return found;
  for (const std::string& dir : internal::split_path_list(*path)) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (internal::is_file(candidate) && ::access(candidate.c_str(), X_OK) == 0) {
      found.push_back(candidate);
    }
  }
  return found;
}

std::optional<fs::path> first_on_path(std::string_view name) {
  std::vector<fs::path> all = all_on_path(name);
  if (all.empty()) return std::nullopt;
  return all.front();
}

fs::path real_path(const fs::path& path) {
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  return ec ? path : real;
}

Status worst(const std::vector<Finding>& findings) {
  Status status = Status::pass;
  for (const Finding& f : findings) {
    if (f.status == Status::fail) return Status::fail;
    if (f.status == Status::warn) status = Status::warn;
  }
  return status;
}

}  // namespace kiln::doctor::detail
