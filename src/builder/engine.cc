// kiln build's entry points (kiln/build.h): run_build puts the scheduler (runner.h) and the job
// runner (job_runner.h) together; plan_build says what a build would do.
#include <signal.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "internal/files.h"
#include "internal/trusted_directory.h"
#include "job_runner.h"
#include "kiln/build.h"
#include "kiln/direct_cache.h"
#include "kiln/error.h"
#include "kiln/launcher.h"
#include "kiln/machine.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "route.h"
#include "runner.h"
#include "sccache_servers.h"

namespace kiln::build {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Whether process `pid` may be the kiln build that made a temporary directory: it is alive and
// runs a program whose name starts with "kiln" (a pid the system gave to some other program since
// is not).
bool may_be_a_kiln(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) == -1 && errno == ESRCH) return false;
  try {
    return internal::read_file(fs::path("/proc") / std::to_string(pid) / "comm")
        .starts_with("kiln");
  } catch (const Error&) {
    return false;  // gone since
  }
}

// Temporary directories a kiln build that no longer runs left in `out_dir` (it was SIGKILLed).
void remove_stale_temporaries(const fs::path& out_dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with(detail::kTempPrefix)) continue;
    pid_t pid = 0;
    try {
      pid = static_cast<pid_t>(std::stol(name.substr(detail::kTempPrefix.size())));
    } catch (const std::exception&) {
      continue;
    }
    if (pid > 0 && !may_be_a_kiln(pid)) fs::remove_all(entry.path(), ec);
  }
}

int thread_count(const Manifest& manifest, int wanted) {
  if (wanted <= 0) wanted = default_jobs();
  return std::max(1, std::min<int>(wanted, static_cast<int>(manifest.jobs.size())));
}

// The servers of the build's sccache jobs, when it has some and sccache is installed (without
// it, such jobs are skipped naming it).
std::unique_ptr<detail::SccacheServers> sccache_servers_for(
    const std::vector<detail::Route>& routes) {
  bool used = std::any_of(routes.begin(), routes.end(), [](const detail::Route& route) {
    return route.launcher == LauncherKind::sccache;
  });
  std::optional<fs::path> program =
      used ? which(launcher_name(LauncherKind::sccache)) : std::nullopt;
  return program ? std::make_unique<detail::SccacheServers>(program->string()) : nullptr;
}

// The slots -j auto means: what the cluster of the build's distributing launcher has, asked
// through the build's first sccache server, else the local recommendation; and where that number
// came from.
std::pair<int, std::string> auto_jobs(const std::vector<detail::Route>& routes,
                                      detail::SccacheServers* sccache) {
  bool distributes = std::any_of(routes.begin(), routes.end(), [](const detail::Route& route) {
    return route.distributes && route.launcher == LauncherKind::sccache;
  });
  if (!distributes || sccache == nullptr) {
    return {default_jobs(), "no sccache-dist cluster to ask: the local recommendation"};
  }
  sccache::DistStatus status;
  std::string problem;
  try {
    status = sccache->dist_status(0);
    problem = status.problem();
  } catch (const Error& e) {
    problem = e.what();
  }
  if (!problem.empty()) {
    return {default_jobs(), fmt::format("sccache-dist: {}; the local recommendation", problem)};
  }
  return {std::max(status.cpus, 1), fmt::format("sccache-dist at {}: {} build servers, {} CPUs",
                                                status.url, status.servers, status.cpus)};
}

// An out_dir another user can change is refused unless the caller said it is fine: they could
// replace the build's outputs (or, had kiln not been careful, make it write through a symlink).
void check_out_dir(const fs::path& out_dir, bool allow_shared) {
  if (allow_shared) return;
  std::optional<internal::UntrustedDirectory> bad =
      internal::find_untrusted_directory(out_dir, true);
  if (!bad) return;
  std::string which = bad->path == out_dir
                          ? out_dir.string()
                          : fmt::format("{} (above {})", bad->path.string(), out_dir.string());
  throw InvalidArgument(fmt::format(
      "--out {}: {} {}, so another user could replace what kiln builds there; refusing to build "
      "into it. Use a directory only you (or root) can write, e.g. `chmod go-w {}`, or pass "
      "--allow-shared-out if everyone who can write it is trusted",
      out_dir.string(), which, bad->why, bad->path.string()));
}

void check_options(const Options& options) {
  if (options.launcher) Launcher::of(*options.launcher);  // not installed
  if (options.jobs < 0 && options.jobs != kAutoJobs) {
    throw InvalidArgument(fmt::format("-j {}: must be at least 1, or auto", options.jobs));
  }
  if (options.local_jobs < 0) {
    throw InvalidArgument(fmt::format("--local-jobs {}: must be at least 1", options.local_jobs));
  }
  if (options.timeout && !(*options.timeout >= 0)) {
    throw InvalidArgument(
        fmt::format("--timeout {}: must be 0 (none) or a number of seconds", *options.timeout));
  }
}

}  // namespace

std::string_view status_name(JobStatus status) { return enum_name(kJobStatusNames, status); }

std::string status_text(const JobResult& job) {
  std::string text(status_name(job.status));
  if (job.status == JobStatus::crashed && job.ending &&
      job.ending->kind == Ending::Kind::signaled && job.ending->value > 0) {
    text += fmt::format(" ({})", signal_name(job.ending->value));
  }
  return text;
}

int default_jobs() { return recommended_jobs_here(); }

Report run_build(const Manifest& manifest, const Options& options) {
  check_options(options);
  fs::path out_dir = fs::absolute(options.out_dir);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (!internal::is_dir(out_dir)) {
    throw InvalidArgument(fmt::format("--out {}: cannot make that directory{}", out_dir.string(),
                                      ec ? ": " + ec.message() : ""));
  }
  check_out_dir(out_dir, options.allow_shared_out);
  remove_stale_temporaries(out_dir);
  std::vector<detail::Route> routes = detail::routes_of(manifest, options);
  std::unique_ptr<detail::SccacheServers> sccache = sccache_servers_for(routes);
  std::string jobs_source;
  int wanted = options.jobs;
  if (wanted == kAutoJobs) std::tie(wanted, jobs_source) = auto_jobs(routes, sccache.get());
  int threads = thread_count(manifest, wanted);
  detail::BuildRunner runner(manifest, options, threads, std::move(routes), std::move(sccache));
  // Only a build with jobs that may go elsewhere holds the others to the local cores: without
  // one, -j is the local parallelism, as it always was.
  bool distributes = false;
  for (size_t i = 0; i < manifest.jobs.size(); ++i) distributes |= runner.runs_elsewhere(i);
  int local = distributes ? (options.local_jobs > 0 ? options.local_jobs : default_jobs()) : 0;
  RemoteCounters before = runner.cache().remote_counters();
  Report report = detail::schedule(manifest, options, threads, runner, local);
  RemoteCounters after = runner.cache().remote_counters();
  report.remote_cache = runner.cache().remote_description();
  report.remote = {.hits = after.hits - before.hits,
                   .misses = after.misses - before.misses,
                   .errors = after.errors - before.errors,
                   .uploads = after.uploads - before.uploads,
                   .rejected = after.rejected - before.rejected,
                   .bytes_down = after.bytes_down - before.bytes_down,
                   .bytes_up = after.bytes_up - before.bytes_up,
                   .seconds = after.seconds - before.seconds};
  report.local_threads = local > 0 ? std::min(local, threads) : threads;
  report.jobs_source = std::move(jobs_source);
  report.cache_warning = runner.cache_warning();
  return report;
}

namespace {

// What the build would do with job `index`: its recipe, chosen in a directory of `scratch` (the
// commands name it; nothing runs), its skip reason, and whether its key is in the cache.
PlannedJob plan_job(const Manifest& manifest, const Options& options, detail::BuildRunner& runner,
                    std::size_t index, const fs::path& scratch) {
  const Job& job = manifest.jobs[index];
  fs::path work = scratch / std::to_string(index);
  fs::create_directory(work);
  std::vector<fs::path> inputs = runner.inputs_of(index);
  bool inputs_known = std::all_of(inputs.begin(), inputs.end(),
                                  [](const fs::path& input) { return internal::is_file(input); });
  // A recipe's tools never depend on its inputs: without them (not made yet) it still says
  // which tools are missing.
  if (!inputs_known) inputs.clear();
  detail::KeyedFiles files(job.sources, inputs);
  detail::Workspace workspace{.work_dir = work,
                              .output = work / job.output_name(),
                              .out_dir = runner.out_dir(),
                              .inputs = inputs,
                              .files = &files,
                              .cache = &runner.cache()};
  detail::JobRecipe prepared = detail::prepare(job, options, workspace, runner.tools());
  PlannedJob planned{&job, runner.output_of(index), false, prepared.skip_reason, {}};
  const detail::Route& route = runner.route(index);
  if (route.launcher) planned.route = launcher_name(*route.launcher);
  if (!route.why_local.empty()) planned.route = "local: " + route.why_local;
  if (runner.cache().enabled() && prepared.skip_reason.empty() && prepared.recipe.cacheable &&
      inputs_known) {
    // The key make() looks the job up under (build_key), as make() looks it up.
    DirectCache direct(runner.cache(), detail::build_key(job, prepared, workspace), files.hashes());
    planned.cached = direct.get().has_value();
  }
  return planned;
}

}  // namespace

std::vector<PlannedJob> plan_build(const Manifest& manifest, const Options& options) {
  check_options(options);
  detail::BuildRunner runner(manifest, options, 0, detail::routes_of(manifest, options));
  TempDirectory scratch;
  std::vector<PlannedJob> plan;
  for (size_t i : manifest.order) {
    plan.push_back(plan_job(manifest, options, runner, i, scratch.path()));
  }
  return plan;
}

}  // namespace kiln::build
