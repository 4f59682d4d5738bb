// The seam between kiln build's scheduler and the work it schedules, as ninja's CommandRunner:
// the scheduler decides which job runs when and what its end means for the others; a JobRunner
// runs one job and says how it went. kiln build's runner (job_runner.h) compiles; the scheduler's
// tests (engine_test.cc) drive it with a scripted runner and no compiler at all.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine_account.h"
#include "kiln/build.h"
#include "kiln/ending.h"
#include "kiln/launcher.h"
#include "kiln/process.h"

namespace kiln::build::detail {

// How one job went, as its runner saw it.
struct Attempt {
  enum class Result { made, from_cache, skipped, failed };
  Result result = Result::failed;
  // failed: how the tool that failed ended; std::nullopt when the job failed without a tool
  // failing (a source that cannot be read, an error inside kiln).
  std::optional<Ending> ending{};
  // failed: the compiler driver reported that its compiler proper crashed (gcc's "internal
  // compiler error", clang's crash banner), though the driver itself exited.
  bool compiler_crashed = false;
  // made / from_cache: the output file.
  std::filesystem::path output{};
  // from_cache: true when the remote level (not this machine's cache) held it.
  bool from_remote = false;
  // failed: what went wrong, in full; skipped: why; made: what its tools printed (warnings).
  std::string log{};
  // Each command the job ran, as a shell would quote it.
  std::vector<std::string> commands{};
  // made / failed: the launcher it went through (std::nullopt for none), and where that says it
  // ran; or, with the build's launcher not taking it, ran "local" and why in the detail.
  std::optional<LauncherKind> engine{};
  EngineAccount account{};
};

class JobRunner {
 public:
  virtual ~JobRunner() = default;
  // Runs job `index` of the manifest on scheduler thread `worker` (0-based), honouring `limits`
  // (the job's deadline and the build's cancel descriptor) in everything it starts, and returns
  // how it went; it never throws. Called concurrently from different workers, never for two jobs
  // at once on one worker.
  virtual Attempt run(std::size_t index, const RunScope::Limits& limits, int worker) = 0;
  // Whether job `index` may run on another machine (a launcher distributes it), so that it does
  // not count against the local slots.
  virtual bool runs_elsewhere(std::size_t /*index*/) const { return false; }
};

// What an attempt means for the build.
struct Verdict {
  JobStatus status = JobStatus::failed;
  // The build was interrupted while this job ran (status is then skipped).
  bool interrupted = false;
};

// The status of a job from its attempt and whether the build had been cancelled by the time it
// ended. For a failure, the first that applies: cancelled (the build's cancel descriptor, or a
// tool ending "cancelled") > timeout > crashed (a signal, or compiler_crashed) > failed.
Verdict verdict_of(const Attempt& attempt, bool build_cancelled);

// Each job's index by its name, for lookups in constant time (Manifest::index_of searches).
std::unordered_map<std::string_view, std::size_t> index_by_name(const Manifest& manifest);

// Runs every job of `manifest` through `runner` on `threads` threads: dependants of a job that
// did not succeed are skipped naming it, without options.keep_going nothing new starts after the
// first failure, a readable options.cancel_fd interrupts the build, never more than `threads`
// jobs run at once, and never more than `local_threads` of those that do not run_elsewhere().
// Each job's deadline is options.timeout, else its own timeout_seconds when the manifest gave one,
// else kDefaultTimeoutSeconds, or kDefaultDistributedTimeoutSeconds for a job that
// runs_elsewhere(); Limits::deadline_of names which ("job \"k\"'s limit of 300s, the default for a
// job that may run on another machine").
// local_threads 0: threads.
Report schedule(const Manifest& manifest, const Options& options, int threads, JobRunner& runner,
                int local_threads = 0);

}  // namespace kiln::build::detail
