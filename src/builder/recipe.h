// How one job of kiln build is made: which tools it needs, found once, and everything that goes
// into its cache key. prepare() decides; cache_key() and execute() only read the Recipe, so the
// tool whose identity is in the key is the tool that runs.
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
#include "kiln/launcher.h"
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
  // The identity of `program` found as run() finds it (a name on PATH, or a path).
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

// A tool a job runs: the program exactly as it goes into argv[0] (a name run() looks up on PATH,
// or a path), and its identity.
struct Tool {
  std::string program;
  std::string identity;
};

struct Recipe {
  // Why the job cannot run here ("" when it can): a missing compiler, linker or library.
  std::string skip_reason;
  // The job's tools by role: "compiler" (cc, clang, emcc, ar, the NDK compiler), "linker"
  // (ld.lld), "launcher"; "nvrtc" and "tar" name in-process compilers by version.
  std::map<std::string, Tool> tools;
  std::optional<Launcher> launcher;
  // rocm-co: the device libraries linked in.
  std::vector<std::filesystem::path> device_libraries;
  // What besides the inputs' content changes the output: kind, language, options, toolchain,
  // arch, format, backend, every tool's identity, the environment variables tools read (JSON).
  std::string key_material;

  // The program of the tool in `role`; "" when the recipe has none.
  const std::string& program(const std::string& role) const;
};

// Finds the job's tools, once. Never runs the job (it may run a tool's --version).
Recipe prepare(const Job& job, const Options& options, ToolIdentities& tools);

// The cache key: the recipe's key material, the content of every source (and of the headers
// they include with "..." found beside them or in -I directories), the inline code, and the
// content of every input (`input_paths`: resolved, dependency outputs included).
std::string cache_key(const Job& job, const Recipe& recipe,
                      const std::vector<std::filesystem::path>& input_paths);

// Makes the job's output at `output` (inside `work_dir`, a fresh directory of the job's own)
// with the recipe's tools. Tools run with run() under the caller's RunScope; an NVRTC compile
// goes to `nvrtc_worker`. Throws what the tools or library functions throw.
void execute(const Job& job, const Recipe& recipe,
             const std::vector<std::filesystem::path>& input_paths,
             const std::filesystem::path& work_dir, const std::filesystem::path& output,
             pool::Worker& nvrtc_worker);

}  // namespace kiln::build::detail
