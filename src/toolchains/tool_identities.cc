// Who each tool is (kiln/tool_identities.h): file identity and `--version`, asked once.
#include "kiln/tool_identities.h"

#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "kiln/direct_cache.h"
#include "kiln/error.h"
#include "kiln/launcher.h"
#include "kiln/paths.h"
#include "kiln/process.h"

namespace kiln {

namespace fs = std::filesystem;

std::string ToolIdentities::of_file(const fs::path& file) {
  std::string identity = file_content_identity(file);
  return identity.empty() ? file.string() : identity;
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
    // Those waiting now share the failure; a later job asks again (a probe cut short by one
    // job's deadline says nothing about the next job's).
    promise.set_exception(std::current_exception());
    std::lock_guard lock(mutex_);
    known_.erase(program);
    throw;
  }
}

namespace {

// Whether `path` is (a link to) a compiler launcher: ccache, sccache, distcc or icecc.
bool is_launcher_file(const fs::path& path) {
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  return !ec && launcher_kind(real.filename().string()).has_value();
}

// Where run() finds `as.argv[0]` (program_path), a launcher's masquerade link passed over for
// the compiler it stands for, unless the name is a launcher's own.
fs::path located(const RunOptions& as) {
  bool is_launcher = launcher_kind(fs::path(as.argv.front()).filename().string()).has_value();
  return program_path(as, is_launcher ? nullptr : is_launcher_file);
}

// The tool of `recipe` that runs as the program `word`; nullptr when there is none.
RecipeTool* program_tool(Recipe& recipe, const std::string& word) {
  for (RecipeTool& tool : recipe.tools) {
    if (!tool.in_process && tool.program == word) return &tool;
  }
  return nullptr;
}

}  // namespace

void ToolIdentities::identify(Recipe& recipe) {
  // Every place each tool runs from, in the order the steps run it.
  std::map<const RecipeTool*, std::vector<fs::path>> places;
  auto locate = [&](RunOptions& run, size_t at, const RecipeTool& tool, bool run_it_there) {
    fs::path found = located(
        {.argv = {run.argv[at]}, .cwd = run.cwd, .env = run.env, .replace_env = run.replace_env});
    if (run_it_there) run.argv[at] = found.string();
    std::vector<fs::path>& seen = places[&tool];
    if (std::find(seen.begin(), seen.end(), found) == seen.end()) seen.push_back(found);
  };
  for (RecipeStep& step : recipe.steps) {
    auto* tool_step = std::get_if<ToolStep>(&step);
    if (tool_step == nullptr || tool_step->run.argv.empty()) continue;
    RunOptions& run = tool_step->run;
    RecipeTool* first = program_tool(recipe, run.argv[0]);
    if (first == nullptr) continue;
    locate(run, 0, *first, true);
    std::optional<LauncherKind> launcher = launcher_kind(first->what);
    if (!launcher) continue;
    // The compiler a launcher runs: ccache and sccache run it here, so they are given the path;
    // distcc and icecc send its name to other machines (distccd refuses a path), and run locally
    // the one PATH gives them, which is the one identified.
    bool local = launcher == LauncherKind::ccache || launcher == LauncherKind::sccache;
    for (size_t at = 1; at < run.argv.size(); ++at) {
      if (RecipeTool* compiler = program_tool(recipe, run.argv[at]);
          compiler && compiler != first) {
        locate(run, at, *compiler, local);
        break;
      }
    }
  }
  for (RecipeTool& tool : recipe.tools) {
    if (tool.in_process) continue;
    auto it = places.find(&tool);
    if (it == places.end()) {  // run by no step of its own (inside a call): as run() finds it
      Identity identity = of(tool.program);
      tool.path = std::move(identity.path);
      tool.identity = std::move(identity.text);
      continue;
    }
    tool.executable = it->second.front();
    tool.path.clear();
    tool.identity.clear();
    for (const fs::path& place : it->second) {
      Identity identity = of(place.string());
      if (tool.path.empty()) tool.path = std::move(identity.path);
      tool.identity += (tool.identity.empty() ? "" : " | ") + identity.text;
    }
  }
}

namespace {

// The probe's own limit: a tool that hangs on --version must not use up the job's whole limit
// and then have its compile blamed. The job's deadline (the RunScope's) still applies when sooner.
constexpr std::chrono::seconds kProbeLimit{10};

// The first line of `tool --version`; std::nullopt when the tool fails it (the file identity is
// then enough). A probe that hangs past its limit, or is cancelled, fails the job in its own words.
std::optional<std::string> probe_version(const fs::path& tool) {
  RunResult r;
  try {
    r = run({.argv = {tool.string(), "--version"}, .timeout = kProbeLimit});
  } catch (const Error&) {
    return std::nullopt;
  }
  if (r.timed_out) {
    throw TimeoutError(fmt::format(
        "the probe `{}` timed out after {:.3g}s (a tool probe may take at most {}s, and no "
        "longer than the job's timeout); the tool was not asked to compile anything",
        r.command_line, std::chrono::duration<double>(r.duration).count(), kProbeLimit.count()));
  }
  if (r.cancelled) throw Cancelled(fmt::format("the probe `{}` was cancelled", r.command_line));
  if (!r.ok()) return std::nullopt;
  return r.output.substr(0, r.output.find('\n'));
}

}  // namespace

ToolIdentities::Identity ToolIdentities::find_out(const std::string& program) {
  Identity identity{.text = program};
  std::optional<fs::path> path;
  try {
    path = located({.argv = {program}});
  } catch (const Error&) {  // not there, or no executable: known by its name
    return identity;
  }
  std::error_code ec;
  fs::path real = fs::canonical(*path, ec);
  // Known by content, not by path: the same compiler on another machine, or installed at
  // another place, is the same tool for a shared cache; a rebuilt one is another.
  std::optional<Cache> local;
  if (!ec) {
    identity.path = real;
    if (cache_.enabled()) local = cache_.local_only();
    std::string content = file_content_identity(real, local ? &*local : nullptr);
    identity.text = content.empty() ? real.string() : content;
  }
  // The version is this machine's answer: remembered locally, keyed by the file's place and
  // content, never fetched from a shared cache.
  std::string key = kiln::cache_key({"kiln-tool-version-2", real.string(), identity.text});
  std::optional<std::string> version = local ? local->get(key) : std::nullopt;
  if (!version) {
    version = probe_version(*path);
    if (version && local) local->put(key, *version);
  }
  if (version) identity.text += " " + *version;
  return identity;
}

}  // namespace kiln
