// kiln build's JobRunner (runner.h): finds a job's tools, looks its output up in the cache, else
// makes it in a temporary directory inside the output directory and moves it into place whole.
#pragma once

#include <memory>
#include <vector>

#include "kiln/cache.h"
#include "kiln/pool.h"
#include "kiln/temp_directory.h"
#include "recipe.h"
#include "route.h"
#include "runner.h"
#include "sccache_servers.h"

namespace kiln::build::detail {

class BuildRunner final : public JobRunner {
 public:
  // `threads`: how many scheduler threads will call run() (each gets its own NVRTC worker,
  // started only when that thread meets an NVRTC job). `sccache`: the servers of the build's
  // sccache jobs (sccache_servers_for); without them such jobs are skipped naming sccache.
  // `routes`: routes_of(manifest, options).
  BuildRunner(const Manifest& manifest, const Options& options, int threads,
              std::vector<Route> routes, std::unique_ptr<SccacheServers> sccache = nullptr);
  Attempt run(std::size_t index, const RunScope::Limits& limits, int worker) override;
  bool runs_elsewhere(std::size_t index) const override { return routes_[index].distributes; }
  const Route& route(std::size_t index) const { return routes_[index]; }

  // The absolute paths of job `index`'s inputs, dependency outputs included.
  std::vector<std::filesystem::path> inputs_of(std::size_t index) const;
  // Where job `index`'s output goes.
  std::filesystem::path output_of(std::size_t index) const;
  // The build's output directory, absolute.
  const std::filesystem::path& out_dir() const noexcept { return out_dir_; }
  const Cache& cache() const noexcept { return cache_; }
  // Why the cache is not used although the build wanted it (it could not be opened: no HOME, a
  // read-only or unsafe directory; kiln/cache.h), else "": the build then runs uncached.
  const std::string& cache_warning() const noexcept { return cache_warning_; }
  ToolIdentities& tools() noexcept { return tools_; }

 private:
  // `where`: the job's engine and account, kept when making throws.
  Attempt make(std::size_t index, const RunScope::Limits& limits, int worker,
               std::optional<RunScope>& making, Attempt& where);
  // Runs the recipe, with what its launcher says of where it ran in `attempt`.
  void perform_and_account(const Recipe& recipe, const Route& route, int worker,
                           const std::filesystem::path& work, Attempt& attempt);
  // The statistics of slot `worker`'s sccache server, asked outside the job's deadline.
  sccache::Stats stats_of(int worker);
  // What the job's launcher needs to account for it: sccache's server of this slot, where
  // icecc logs.
  Launcher::Environment launcher_env(const Route& route, int worker,
                                     const std::filesystem::path& work);
  // Worker `worker`'s own directory in the output directory, made on its first job and emptied
  // after each: a job's work never meets another's, and a job costs no mkdir and rmdir (creating
  // inodes is the largest part of kiln's own time in a cold build on ext4).
  const std::filesystem::path& work_dir(int worker);

  const Manifest& manifest_;
  const Options& options_;
  std::unordered_map<std::string_view, std::size_t> index_;  // the jobs by name
  std::filesystem::path out_dir_;
  std::string cache_warning_;  // before cache_, which is opened filling it
  Cache cache_;
  ToolIdentities tools_;
  // Each NVRTC worker's TMPDIR (its automatic precompiled headers, 5-13 MB a job, which NVRTC
  // removes only at a normal exit, and a killed worker never has one), inside the output
  // directory. Declared before the workers: they are killed before these are removed.
  std::vector<TempDirectory> nvrtc_temp_dirs_;
  std::vector<std::unique_ptr<pool::Worker>> nvrtc_workers_;
  std::vector<std::optional<TempDirectory>> work_dirs_;
  std::vector<Route> routes_;  // by job
  std::unique_ptr<SccacheServers> sccache_;
};

// The prefix of the temporary directories kiln build makes in its output directory.
inline constexpr std::string_view kTempPrefix = ".kiln-tmp-";

}  // namespace kiln::build::detail
