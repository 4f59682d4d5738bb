// One job of kiln build: which tools it needs (and whether they are here), its cache key, and
// how it makes its output. The engine (engine.cc) decides when; this file decides how.
#pragma once

#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kiln/build.h"
#include "kiln/cache.h"
#include "kiln/manifest.h"
#include "kiln/pool.h"

namespace kiln::build::detail {

// Who each tool is, asked once per build and shared by every job: the real path, size and
// modification time of its executable and the first line of its `--version`. Thread-safe.
class ToolIdentities {
 public:
  // `cache` (may be disabled) remembers `--version` answers across builds, keyed by the file's
  // identity, so an all-cached build runs no tool at all.
  explicit ToolIdentities(const Cache& cache) : cache_(cache) {}
  std::string of(const std::string& program);
  // A file a tool reads (device libraries): its path, size and modification time.
  static std::string of_file(const std::filesystem::path& file);

 private:
  std::string find_out(const std::string& program);

  const Cache& cache_;
  std::mutex mutex_;
  // One answer per program, found once even when several jobs ask at the same time.
  std::map<std::string, std::shared_future<std::string>> known_;
};

// What a job needs before it can run.
struct Prepared {
  // Why the job cannot run here ("" when it can): a missing compiler, linker or library.
  std::string skip_reason;
  // The tool identities and settings that go into the cache key besides the inputs' content.
  std::string recipe;
};

// Finds the job's tools. Never runs the job.
Prepared prepare(const Job& job, const Options& options, ToolIdentities& tools);

// The cache key: the recipe, the content of every source (and of the headers they include with
// "..." found beside them or in -I directories), the inline code, and the content of every
// input (`input_paths`: resolved, dependency outputs included).
std::string cache_key(const Job& job, const Prepared& prepared,
                      const std::vector<std::filesystem::path>& input_paths);

// Makes the job's output at `output` (inside `work_dir`, a fresh directory of the job's own).
// Tools run with run() under the caller's RunScope; an NVRTC compile goes to `nvrtc_worker`.
// Throws what the tools or library functions throw.
void execute(const Job& job, const Options& options,
             const std::vector<std::filesystem::path>& input_paths,
             const std::filesystem::path& work_dir, const std::filesystem::path& output,
             pool::Worker& nvrtc_worker);

}  // namespace kiln::build::detail
