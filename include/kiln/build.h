// kiln build: compile every job of a manifest (kiln/manifest.h) in parallel, each with its
// timeout, isolated from the others, through a content-addressed cache, and report what happened.
//
//   kiln::build::Manifest manifest = kiln::build::parse_manifest("examples/kiln.json");
//   kiln::build::Report report = kiln::build::run_build(manifest, {.jobs = 4, .out_dir = "out"});
//   for (const kiln::build::JobResult& job : report.jobs)
//     std::cout << job.name << ": " << kiln::build::status_name(job.status) << "\n";
//
// Each job runs on one of `jobs` threads. Tools (compilers, linkers, ar, emcc, ...) run as child
// processes under a RunScope (kiln/process.h) that carries the job's deadline and the build's
// cancel descriptor; NVRTC compiles run in a pool worker of that thread (kiln/pool.h), so a
// crashing or hanging NVRTC takes down only its worker. A job's output is made in a temporary
// directory and renamed into `out_dir` only when complete. A job whose toolchain is absent is
// skipped with the reason; a failed, timed-out or crashed job skips its dependants; without
// keep_going the first failure stops new jobs from starting (running ones finish).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/cache.h"
#include "kiln/ending.h"
#include "kiln/enum_names.h"
#include "kiln/launcher.h"
#include "kiln/manifest.h"

namespace kiln::build {

enum class JobStatus { pending, running, done, cached, failed, timeout, crashed, skipped };
// Their names, as reports and progress say them (kiln/enum_names.h).
inline constexpr EnumName<JobStatus> kJobStatusNames[] = {
    {JobStatus::pending, "pending"}, {JobStatus::running, "running"},
    {JobStatus::done, "done"},       {JobStatus::cached, "cached"},
    {JobStatus::failed, "failed"},   {JobStatus::timeout, "timeout"},
    {JobStatus::crashed, "crashed"}, {JobStatus::skipped, "skipped"}};
static_assert(in_enum_order(kJobStatusNames, JobStatus::skipped), "a name for every JobStatus");
// The status's name in kJobStatusNames ("cached").
std::string_view status_name(JobStatus status);

struct JobResult {
  std::string name;
  JobKind kind = JobKind::object;
  JobStatus status = JobStatus::pending;
  // The output file in out_dir (set once done or cached).
  std::filesystem::path output;
  bool cached = false;
  // Wall time of the job, and when it started and ended, from the start of the build.
  double seconds = 0;
  double start_seconds = 0;
  double end_seconds = 0;
  // The thread ("worker") that ran it, 0-based; -1 when it never ran.
  int worker = -1;
  // Each command the job ran, as a shell would quote it (one per tool run).
  std::vector<std::string> commands;
  // Where its compile ran, from the launcher's own account (sccache's statistics, icecc's and
  // distcc's logs): "remote", "local", "mixed" (some steps each), "engine-cache" (the launcher's
  // cache), "kiln-cache" (kiln's); "" when it never ran. "local" without an engine: no launcher.
  std::string ran;
  // The launcher that ran it ("sccache", "icecc", "distcc", "ccache"); "" for none.
  std::string engine;
  // In the engine's words ("sccache: 2 compiles on 10.0.0.2:10501"), or why the build's launcher
  // did not take this job ("NVRTC compiles in kiln's process: ...").
  std::string ran_detail;
  // The build servers that ran its compiles.
  std::vector<std::string> remote_hosts;
  // failed, timeout, crashed: how the tool that failed ended, when one did (a compiler killed by
  // SIGSEGV is Ending::signaled(SIGSEGV)); std::nullopt otherwise.
  std::optional<Ending> ending;
  // What went wrong, in full (the tool's message, output and command line), or why the job was
  // skipped; when done, what its tools printed (warnings, ptxas' resource lines), often ""; ""
  // when cached.
  std::string log;
};

// The job's status as progress prints it: status_name(), and for a crash the signal when known
// ("crashed (SIGSEGV)").
std::string status_text(const JobResult& job);

// One line of progress: a job started or finished. Delivered from the job's thread, serialized
// (never two at once).
struct Event {
  enum Kind { started, finished } kind = started;
  const JobResult* job = nullptr;
  std::size_t finished_count = 0;  // jobs finished so far (this one included when finished)
  std::size_t total = 0;
};

// Options::jobs: as many as the distributing launcher's cluster has slots (sccache-dist's
// scheduler tells; distcc's hosts list; otherwise the local recommendation).
inline constexpr int kAutoJobs = -1;

struct Options {
  // Jobs at once; 0: the doctor's recommendation for this machine (kiln::doctor); kAutoJobs.
  // With a launcher that distributes (sccache, distcc, icecc) it may exceed the local cores, as
  // distcc and icecc users set -j to the cluster's slots: only jobs it may send elsewhere use the
  // slots above local_jobs.
  int jobs = 0;
  // At most this many jobs that run locally at once (links, NVRTC, tar, ...) when some job may
  // go elsewhere; 0: the doctor's recommendation.
  int local_jobs = 0;
  // When set, every job's timeout in seconds (0 = none), whatever the manifest says.
  std::optional<double> timeout{};
  std::filesystem::path out_dir = "kiln-out";
  // Build even when another user could change out_dir or a directory above it (owned by them, or
  // writable by group or others without the sticky bit). Otherwise run_build refuses such an
  // out_dir (InvalidArgument): whoever can write it could replace what the build makes.
  bool allow_shared_out = false;
  // ccache, sccache, distcc or icecc for the C/C++ jobs (and, sccache, the nvcc-backend CUDA
  // jobs) that name no launcher of their own; std::nullopt: none.
  std::optional<LauncherKind> launcher{};
  bool keep_going = false;
  bool use_cache = true;
  // A descriptor that becomes readable to stop the build (Ctrl-C): running jobs are killed, none
  // is started, and no partial output is left. -1: none.
  int cancel_fd = -1;
  std::function<void(const Event&)> on_event{};
};

struct Summary {
  std::size_t done = 0, cached = 0, failed = 0, timeout = 0, crashed = 0, skipped = 0;
  double seconds = 0;
  // True when the build was cancelled before it finished.
  bool interrupted = false;
  // Whether this build succeeded: every job done, cached or skipped for a missing toolchain.
  bool ok() const { return failed == 0 && timeout == 0 && crashed == 0 && !interrupted; }
};

struct Report {
  std::vector<JobResult> jobs;  // in the manifest's order
  Summary summary;
  int threads = 0;
  // How many of them may run locally at once (== threads unless a launcher distributes).
  int local_threads = 0;
  // Where -j auto got its number ("sccache-dist: 2 build servers, 4 CPUs"); "" otherwise.
  std::string jobs_source;
  // Why the cache was not used although it was wanted (it could not be opened: no HOME, a
  // read-only or unsafe directory), else "": every job then ran uncached.
  std::string cache_warning;
  // The cache's remote level ("redis://cache:6379/0 (read-only)"; "" for none) and what it did
  // during this build (kiln/cache.h).
  std::string remote_cache;
  RemoteCounters remote{};
};

// Runs the build. Throws only for what stops it as a whole (an unusable out_dir);
// everything a job does is in its JobResult.
Report run_build(const Manifest& manifest, const Options& options);

// What a dry run prints: the jobs in the order they would start, each with its output and
// whether the cache already holds it.
struct PlannedJob {
  const Job* job = nullptr;
  std::filesystem::path output;
  bool cached = false;
  std::string skip_reason;  // "" unless its toolchain is absent
  // "sccache" when its compile goes through that launcher, "local: <why>" when the build's
  // launcher does not take it, "" without a launcher.
  std::string route;
};
std::vector<PlannedJob> plan_build(const Manifest& manifest, const Options& options);

// {"jobs": [{"name", "kind", "status", "seconds", "output", "cached", "command", "log", "worker",
//  "ran", "engine", "ran_detail", "remote_hosts"}], "summary": {..., "ran": {"remote": n, ...}}}
// as text.
std::string report_json(const Report& report);
// Chrome trace-event JSON: one track per worker thread, one complete ("X") event per job that
// ran, its status in args; opens in Perfetto and chrome://tracing.
std::string trace_json(const Report& report);
// The closing summary: counts, total time, the slowest jobs, and why jobs were skipped.
std::string summary_text(const Report& report);

// Writes a report (or any text) to the path a user named: "-" is standard output; a symbolic
// link is written through and a device, FIFO or socket is opened and written, never replaced;
// a regular file (or nothing) is replaced whole or not at all. Throws SystemError naming `path`
// and errno's text.
void write_report_file(const std::filesystem::path& path, std::string_view text);

// The jobs value the doctor recommends for this machine.
int default_jobs();

}  // namespace kiln::build
