// Who each tool is (kiln/tool_identities.h): file identity and `--version`, asked once.
#include "kiln/tool_identities.h"

#include <sys/stat.h>

#include <fmt/format.h>

#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/process.h"

namespace kiln {

namespace fs = std::filesystem;

std::string ToolIdentities::of_file(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return file.string();
  return fmt::format("{} {} {}.{}", file.string(), st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
}

ToolIdentities::Identity ToolIdentities::of(const std::string& program) {
  std::promise<Identity> promise;
  std::shared_future<Identity> answer;
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
    Identity identity = find_out(program);
    promise.set_value(identity);
    return identity;
  } catch (...) {
    promise.set_exception(std::current_exception());
    throw;
  }
}

void ToolIdentities::identify(Recipe& recipe) {
  for (RecipeTool& tool : recipe.tools) {
    if (tool.in_process) continue;
    Identity identity = of(tool.program);
    tool.path = std::move(identity.path);
    tool.identity = std::move(identity.text);
  }
}

ToolIdentities::Identity ToolIdentities::find_out(const std::string& program) {
  Identity identity{.text = program};
  std::optional<fs::path> path =
      program.find('/') != std::string::npos ? std::optional<fs::path>(program) : which(program);
  if (!path) return identity;
  std::error_code ec;
  fs::path real = fs::canonical(*path, ec);
  if (!ec) {
    identity.path = real;
    identity.text = of_file(real);
  }
  std::string key = kiln::cache_key({"kiln-tool-version-1", identity.text});
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
  if (version) identity.text += " " + *version;
  return identity;
}

}  // namespace kiln
