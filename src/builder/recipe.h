// How one job of kiln build is made: the recipe of the toolchain module that knows its kind
// (kiln/recipe.h), chosen once by prepare(). The cache key (key_text) and the making (perform)
// both read that one value, so the tool whose identity is in the key is the tool that runs.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "keyed_files.h"
#include "kiln/build.h"
#include "kiln/cache.h"
#include "kiln/launcher.h"
#include "kiln/manifest.h"
#include "kiln/pool.h"
#include "kiln/recipe.h"
#include "kiln/tool_identities.h"

namespace kiln::build::detail {

// Where a job is made, and from what.
struct Workspace {
  // A fresh directory of the job's own: inline sources, temporaries and the output go there.
  std::filesystem::path work_dir{};
  // Where the output is made (inside work_dir; moved into place afterwards).
  std::filesystem::path output{};
  // The build's output directory, where dependency outputs are.
  std::filesystem::path out_dir{};
  // The job's inputs, absolute, dependency outputs included.
  std::vector<std::filesystem::path> inputs{};
  // Where an NVRTC compile runs when kiln's compile server cannot take it; nullptr: in this
  // process.
  pool::Worker* nvrtc_worker = nullptr;
  // The job's sources and inputs as read once for this attempt (keyed_files.h); nullptr: each
  // reader reads them itself.
  KeyedFiles* files = nullptr;
  // Set on the job's launcher besides its own environment: the build's sccache server of this
  // slot, where icecc or distcc log (kiln/launcher.h: kLauncherPlumbing, never keyed).
  Launcher::Environment launcher_env{};
  // The build's cache: keys name paths relative to its base directory (Cache::relocated), and a
  // CUDA job is keyed as the kernel cache keys it (cuda::kernel_cache_key), which
  // kiln.support.nvcc shares; nullptr: absolute paths, no kernel key.
  const Cache* cache = nullptr;
};

struct JobRecipe {
  // Why the job cannot run here ("" when it can): a missing compiler, linker or library.
  std::string skip_reason{};
  // The toolchain module's recipe, its tools identified (when skip_reason is "").
  Recipe recipe{};
  // Where the compile step writes its dependency output (-MD -MF, in the work directory), and the
  // directory its relative paths are relative to (also set with `headers`); empty when the job
  // compiles no C-family source.
  std::filesystem::path depfile{};
  std::filesystem::path depfile_cwd{};
  // For a job whose compiler writes no dependency output (CUDA): the headers it reads, asked
  // after the compile into the given scratch directory; std::nullopt when they cannot be known.
  using Headers = std::function<std::optional<std::vector<std::filesystem::path>>(
      const std::filesystem::path& scratch)>;
  Headers headers{};
  // The job's key when its toolchain module keys it itself: a CUDA job's is the kernel cache's
  // (cuda::kernel_cache_key), the key compile_cuda and `kiln cuda compile` look the same kernel
  // up under. Empty: build_key() computes one from the recipe.
  std::string key{};
};

// Picks the job's recipe from its toolchain module and identifies its tools (which may run their
// --version). A tool that is not installed becomes the skip reason. Runs nothing of the job; a
// static library's recipe unpacks its .tar inputs into work_dir. Throws what the modules throw
// for anything but a missing tool (a bad archive, say).
JobRecipe prepare(const Job& job, const Options& options, const Workspace& workspace,
                  ToolIdentities& identities);

// What the cache key hashes: the job's kind, language, options, toolchain, arch, format and
// backend; the recipe's tools with their identities, its steps (each command with the work and
// output directories written as $WORK and $OUT, so that a key holds across builds) and its key
// material; the content of every source, the inline code, and the content of every input. The
// headers a compile reads are not in it: DirectCache (kiln/direct_cache.h) keys them from the
// compiler's own dependency output.
std::string key_text(const Job& job, const Recipe& recipe, const Workspace& workspace);

// kiln::cache_key of key_text().
std::string cache_key(const Job& job, const Recipe& recipe, const Workspace& workspace);

// The job's key in kiln's cache, computed once per attempt and used by both make() and
// --dry-run: prepared.key when the toolchain module gave one, else cache_key() with the
// directory the compiler's relative paths start from (prepared.depfile_cwd). DirectCache
// (kiln/direct_cache.h) adds the headers.
std::string build_key(const Job& job, const JobRecipe& prepared, const Workspace& workspace);

}  // namespace kiln::build::detail
