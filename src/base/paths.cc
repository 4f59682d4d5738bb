#include "kiln/paths.h"

#include "internal/path_list.h"
#include "internal/spawn.h"
#include "kiln/error.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

namespace kiln {
namespace fs = std::filesystem;
namespace {

bool is_executable_file(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::optional<fs::path> which(std::string_view name) {
  if (name.empty()) return std::nullopt;
  // An absolute name joined to any directory is itself: just that file.
  if (fs::path(name).is_absolute()) {
    return is_executable_file(fs::path(name)) ? std::optional<fs::path>(name) : std::nullopt;
  }
  // The seed's order: the name itself, /bin, then PATH's directories; the first hit wins, so
  // checked one by one (get_cc() asks for six names, each in every PATH directory).
  for (const fs::path& first : {fs::path(name), fs::path("/bin") / name}) {
    if (is_executable_file(first)) return first;
  }
  const char* path_variable = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
  for (const std::string& dir :
       internal::split_path_list(path_variable != nullptr ? path_variable : "")) {
    fs::path candidate = fs::path(dir) / name;
    if (is_executable_file(candidate)) return candidate;
  }
  return std::nullopt;
}

fs::path program_path(const RunOptions& options,
                      const std::function<bool(const fs::path&)>& pass_over) {
  if (options.argv.empty()) throw InvalidArgument("cannot run a program with an empty argv");
  const std::string& name = options.argv.front();
  std::string path_variable =
      internal::path_of(internal::make_environment(options.env, options.replace_env));
  fs::path found = internal::resolve_executable(name, path_variable, options.cwd);
  if (name.find('/') != std::string::npos || !pass_over || !pass_over(found)) return found;
  for (const std::string& dir : internal::split_path_list(path_variable)) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (candidate.is_relative() && !options.cwd.empty()) candidate = options.cwd / candidate;
    if (is_executable_file(candidate) && !pass_over(candidate)) return fs::absolute(candidate);
  }
  return found;  // nothing else: what run() starts
}

bool is_source_path(std::string_view text) {
  std::error_code ec;
  if (!text.empty() && text.find('\0') == std::string_view::npos &&
      fs::exists(fs::path(text), ec)) {
    return true;
  }
  if (text.find('\n') != std::string_view::npos) return false;
  size_t dot = text.rfind('.');
  if (dot == std::string_view::npos) return false;
  std::string_view extension = text.substr(dot + 1);
  return extension.empty() || (!is_space(extension.front()) && !is_space(extension.back()));
}

}  // namespace kiln
