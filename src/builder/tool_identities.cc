// Who each tool of a build is (recipe.h): file identity and `--version`, asked once per build.
#include <sys/stat.h>

#include <fmt/format.h>

#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "recipe.h"

namespace kiln::build::detail {

namespace fs = std::filesystem;

std::string ToolIdentities::of_file(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return file.string();
  return fmt::format("{} {} {}.{}", file.string(), st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
}

std::string ToolIdentities::of(const std::string& program) {
  std::promise<std::string> promise;
  std::shared_future<std::string> answer;
  {
    std::lock_guard lock(mutex_);
    if (auto it = known_.find(program); it != known_.end()) {
      answer = it->second;
    } else {
      known_.emplace(program, promise.get_future().share());
    }
  }
  if (answer.valid()) return answer.get();
  try {
    std::string identity = find_out(program);
    promise.set_value(identity);
    return identity;
  } catch (...) {
    promise.set_exception(std::current_exception());
    throw;
  }
}

std::string ToolIdentities::find_out(const std::string& program) {
  std::string identity = program;
  std::optional<fs::path> path =
      program.find('/') != std::string::npos ? std::optional<fs::path>(program) : which(program);
  if (path) {
    std::error_code ec;
    fs::path real = fs::canonical(*path, ec);
    if (!ec) identity = of_file(real);
    std::string key = kiln::cache_key({"kiln-tool-version-1", identity});
    std::optional<std::string> version = ec ? std::nullopt : cache_.get(key);
    if (!version) {
      try {
        RunResult r =
            run({.argv = {path->string(), "--version"}, .timeout = std::chrono::seconds(10)});
        if (r.ok()) {
          version = r.output.substr(0, r.output.find('\n'));
          if (!ec) cache_.put(key, *version);
        }
      } catch (const Error&) {  // NOLINT(bugprone-empty-catch): the file identity is enough
      }
    }
    if (version) identity += " " + *version;
  }
  return identity;
}

}  // namespace kiln::build::detail
