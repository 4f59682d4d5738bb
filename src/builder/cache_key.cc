// key_text() and cache_key(): a job's key, read from its recipe (recipe.h).
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "internal/cache_pins.h"
#include "internal/files.h"
#include "kiln/cache.h"
#include "recipe.h"

namespace kiln::build::detail {
namespace {

namespace fs = std::filesystem;

void add_part(std::string& blob, std::string_view part) {
  blob += std::to_string(part.size());
  blob += ':';
  blob += part;
}

// `text` with the job's own directories named as $WORK and $OUT, and the base directory as
// $BASE: a command names the same files in every build, wherever its temporary directory is,
// and in every checkout of the project. A '$' of the text itself is doubled, so that no option
// can be written to read like one of those names (internal/cache_pins.h: relocated_text).
std::string stable(const std::string& text, const Workspace& ws) {
  std::string work = ws.work_dir.string();
  std::string out = ws.out_dir.string();
  return internal::relocated_text(text, ws.cache != nullptr ? ws.cache->base_directory() : "",
                                  {{work, "$WORK"}, {out, "$OUT"}});
}

// A word of a command as the key holds it: the path a tool was found at (RecipeTool::executable,
// which the step runs) as the tool's program, the name the module gave it; where it was found
// differs between machines, and the tool's identity (content and version) says which it is.
std::string keyed_word(const std::string& word, const Recipe& recipe, const Workspace& ws) {
  for (const RecipeTool& tool : recipe.tools) {
    if (!tool.executable.empty() && word == tool.executable.native())
      return stable(tool.program, ws);
  }
  return stable(word, ws);
}

nlohmann::json step_material(const RecipeStep& step, const Recipe& recipe, const Workspace& ws) {
  if (const auto* call = std::get_if<CallStep>(&step)) {
    return {{"call", call->name}, {"tool", call->tool}};
  }
  const auto& run = std::get<ToolStep>(step).run;
  nlohmann::json argv = nlohmann::json::array();
  for (const std::string& arg : run.argv) argv.push_back(keyed_word(arg, recipe, ws));
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [name, value] : run.env) {
    bool plumbing = std::find(std::begin(kLauncherPlumbing), std::end(kLauncherPlumbing), name) !=
                    std::end(kLauncherPlumbing);
    if (!plumbing) env[name] = value ? stable(*value, ws) : "(unset)";
  }
  return {{"argv", argv}, {"cwd", stable(run.cwd.string(), ws)}, {"env", env}};
}

nlohmann::json stable_all(const std::vector<std::string>& texts, const Workspace& ws) {
  nlohmann::json all = nlohmann::json::array();
  for (const std::string& text : texts) all.push_back(stable(text, ws));
  return all;
}

// Everything of the job and its recipe that changes the output, but the files' content.
std::string material(const Job& job, const Recipe& recipe, const Workspace& ws) {
  nlohmann::json material = {
      {"kind", kind_name(job.kind)},
      {"language", job.language ? language_name(*job.language) : ""},
      {"options", stable_all(job.options, ws)},
      {"toolchain", toolchain_name(job.toolchain)},
      {"arch", job.arch},
      {"format", job.kind == JobKind::cuda ? cuda::format_name(job.format) : ""},
      {"backend", job.kind == JobKind::cuda ? cuda::backend_name(job.backend) : ""},
      {"tools", nlohmann::json::array()},
      {"steps", nlohmann::json::array()},
      {"key_material", stable_all(recipe.key_material, ws)}};
  for (const RecipeTool& tool : recipe.tools) {
    material["tools"].push_back(
        {{"program", stable(tool.program, ws)}, {"identity", tool.identity}});
  }
  for (const RecipeStep& step : recipe.steps) {
    material["steps"].push_back(step_material(step, recipe, ws));
  }
  // Paths are bytes: one that is not UTF-8 (a Latin-1 directory) cannot be JSON text, and
  // replacing its bytes would let two paths share a key. Such material is keyed by its CBOR
  // encoding, which keeps every byte; all other keys stay as they were.
  try {
    return material.dump();
  } catch (const nlohmann::json::type_error&) {
    std::vector<uint8_t> cbor = nlohmann::json::to_cbor(material);
    return {cbor.begin(), cbor.end()};
  }
}

}  // namespace

std::string key_text(const Job& job, const Recipe& recipe, const Workspace& ws) {
  std::optional<KeyedFiles> own;  // a caller without the job's files read
  KeyedFiles& files = ws.files != nullptr ? *ws.files : own.emplace(job.sources, ws.inputs);
  std::string blob;
  add_part(blob, material(job, recipe, ws));
  add_part(blob, job.code);
  // Sources then inputs, as KeyedFiles holds them: a source by its path, an input (a dependency
  // output, which lies elsewhere each build) by its name.
  std::vector<std::pair<fs::path, std::string>> hashed = files.hashes();
  for (size_t i = 0; i < hashed.size(); ++i) {
    const auto& [path, hash] = hashed[i];
    add_part(blob, i < job.sources.size() ? stable(path.string(), ws) : path.filename().string());
    add_part(blob, hash);
  }
  return blob;
}

std::string cache_key(const Job& job, const Recipe& recipe, const Workspace& ws) {
  return kiln::cache_key({"kiln-build-4", key_text(job, recipe, ws)});
}

std::string build_key(const Job& job, const JobRecipe& prepared, const Workspace& ws) {
  if (!prepared.key.empty()) return prepared.key;  // the toolchain module's own (a CUDA kernel's)
  // Relative -I directories and paths in the dependency output are relative to the compiler's
  // working directory: the same recorded header may be another file from elsewhere.
  // A compiler that runs in the job's own directory ($WORK) runs in the same place every build.
  return kiln::cache_key(
      {cache_key(job, prepared.recipe, ws), stable(prepared.depfile_cwd.string(), ws)});
}

}  // namespace kiln::build::detail
