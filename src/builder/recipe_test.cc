// A Recipe's tools are the tools that run: for every kind of the bundled examples, each command
// execute() ran starts a program that resolves to the same file as one of the recipe's tools, the
// tools whose identities make the cache key.
#include "recipe.h"

#include <gtest/gtest.h>

#include <set>

#include "internal/files.h"
#include "kiln/cuda.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"

namespace kiln::build::detail {
namespace {

namespace fs = std::filesystem;

// The real file a program name or path runs.
std::string real_file(const std::string& program) {
  std::optional<fs::path> path =
      program.find('/') != std::string::npos ? std::optional<fs::path>(program) : which(program);
  if (!path) return "not found: " + program;
  return fs::canonical(*path).string();
}

std::string first_word(const std::string& command_line) {
  return command_line.substr(0, command_line.find(' '));
}

TEST(Recipe, TheToolsThatRunAreTheToolsInTheKeyForEveryKind) {
  Manifest manifest = parse_manifest(fs::path(KILN_SOURCE_DIR) / "examples" / "kiln.json");
  std::set<JobKind> kinds;
  TempDirectory out;
  Cache cache = Cache::disabled();
  ToolIdentities identities(cache);
  pool::Worker nvrtc_worker;
  for (std::size_t i : manifest.order) {
    const Job& job = manifest.jobs[i];
    Recipe recipe = prepare(job, {}, identities);
    if (!recipe.skip_reason.empty()) GTEST_SKIP() << job.name << ": " << recipe.skip_reason;
    std::set<std::string> key_tools;
    for (const auto& [role, tool] : recipe.tools) {
      key_tools.insert(role == "nvrtc" || role == "tar" ? tool.program : real_file(tool.program));
      EXPECT_NE(recipe.key_material.find(tool.identity), std::string::npos) << job.name;
    }
    std::vector<fs::path> inputs;
    for (const Input& input : job.inputs) {
      inputs.push_back(input.job.empty()
                           ? input.file
                           : out.path() /
                                 manifest.jobs[*manifest.index_of(input.job)].output_name());
    }
    TempDirectory work;
    RunScope scope({});
    execute(job, recipe, inputs, work.path(), work.path() / job.output_name(), nvrtc_worker);
    internal::move_into_place(work.path() / job.output_name(), out.path() / job.output_name());
    kinds.insert(job.kind);
    for (const RunScope::Record& run : scope.runs()) {
      EXPECT_TRUE(key_tools.contains(real_file(first_word(run.command_line))))
          << job.name << " ran " << run.command_line;
    }
    if (job.kind == JobKind::cuda && job.backend == cuda::Backend::nvrtc) {
      auto [major, minor] = cuda::nvrtc_version();
      EXPECT_TRUE(
          key_tools.contains("nvrtc " + std::to_string(major) + "." + std::to_string(minor)));
    }
    if (job.kind != JobKind::tar && job.kind != JobKind::cuda) {
      EXPECT_FALSE(scope.runs().empty()) << job.name << " ran no tool";
    }
  }
  EXPECT_EQ(kinds.size(), std::size(kJobKinds)) << "the examples hold every kind";
}

}  // namespace
}  // namespace kiln::build::detail
