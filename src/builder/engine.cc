// kiln build's scheduler: a fixed set of threads takes ready jobs in manifest order, runs each
// under a RunScope with its deadline and the build's cancel descriptor, and settles what follows
// from its outcome (dependants become ready or are skipped; without keep_going, nothing new
// starts after a failure).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "job.h"
#include "internal/fd.h"
#include "internal/files.h"
#include "kiln/build.h"
#include "kiln/cache.h"
#include "kiln/error.h"
#include "kiln/launcher.h"
#include "kiln/machine.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"

namespace kiln::build {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kTempPrefix = ".kiln-tmp-";

using internal::readable;

// Temporary directories a kiln build that no longer runs left in `out_dir` (it was SIGKILLed).
void remove_stale_temporaries(const fs::path& out_dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with(kTempPrefix)) continue;
    pid_t pid = 0;
    try {
      pid = static_cast<pid_t>(std::stol(name.substr(kTempPrefix.size())));
    } catch (const std::exception&) {
      continue;
    }
    if (pid > 0 && ::kill(pid, 0) == -1 && errno == ESRCH) fs::remove_all(entry.path(), ec);
  }
}

mode_t output_mode(JobKind kind) {
  return kind == JobKind::executable || kind == JobKind::shared ? 0755 : 0644;
}

struct Outcome {
  JobStatus status = JobStatus::done;
  bool cached = false;
  bool interrupted = false;
  std::string log;
  std::vector<std::string> commands;
};

// How a job that threw ended, from what its tools did: a tool killed at the deadline is a
// timeout, one killed by a signal kiln did not send is a crash (and so is a compiler driver
// reporting that its compiler proper crashed: gcc's "internal compiler error", clang's crash
// banner), a cancel is an interruption.
Outcome classify_failure(const RunScope& scope, std::string log) {
  bool cancelled = false;
  bool timed_out = false;
  bool crashed = log.find("internal compiler error") != std::string::npos ||
                 log.find("PLEASE submit a bug report") != std::string::npos;
  for (const RunScope::Record& record : scope.runs()) {
    cancelled = cancelled || record.cancelled;
    timed_out = timed_out || record.timed_out;
    crashed = crashed || (record.signal != 0 && !record.cancelled && !record.timed_out);
  }
  JobStatus status = cancelled   ? JobStatus::skipped
                     : timed_out ? JobStatus::timeout
                     : crashed   ? JobStatus::crashed
                                 : JobStatus::failed;
  return {status, false, cancelled, std::move(log), {}};
}

class Build {
 public:
  Build(const Manifest& manifest, const Options& options)
      : manifest_(manifest),
        options_(options),
        out_dir_(fs::absolute(options.out_dir)),
        cache_(options.use_cache ? Cache::open() : Cache::disabled()),
        tools_(cache_),
        results_(manifest.jobs.size()),
        waiting_on_(manifest.jobs.size(), 0),
        dependants_(manifest.jobs.size()),
        position_(manifest.jobs.size(), 0) {
    for (size_t i = 0; i < manifest.jobs.size(); ++i) {
      const Job& job = manifest.jobs[i];
      results_[i].name = job.name;
      results_[i].kind = job.kind;
      for (const std::string& dep : job.deps) {
        std::optional<size_t> d = manifest.index_of(dep);
        if (!d)
          throw InvalidArgument(
              fmt::format("job \"{}\" waits for unknown job \"{}\"", job.name, dep));
        dependants_[*d].push_back(i);
        ++waiting_on_[i];
      }
    }
    for (size_t p = 0; p < manifest.order.size(); ++p) position_[manifest.order[p]] = p;
    for (size_t i : manifest.order) {
      if (waiting_on_[i] == 0) ready_.push_back(i);
    }
    unfinished_ = manifest.jobs.size();
  }

  Report run(int threads) {
    start_ = Clock::now();
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) pool.emplace_back([this, t] { serve(t); });
    for (std::thread& thread : pool) thread.join();
    Report report;
    report.jobs = std::move(results_);
    report.threads = threads;
    Summary& s = report.summary;
    s.seconds = seconds_since_start();
    s.interrupted = interrupted_;
    for (const JobResult& r : report.jobs) {
      switch (r.status) {
        case JobStatus::done:
          ++s.done;
          break;
        case JobStatus::cached:
          ++s.cached;
          break;
        case JobStatus::failed:
          ++s.failed;
          break;
        case JobStatus::timeout:
          ++s.timeout;
          break;
        case JobStatus::crashed:
          ++s.crashed;
          break;
        default:
          ++s.skipped;
          break;
      }
    }
    return report;
  }

 private:
  double seconds_since_start() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }

  void serve(int thread) {
    pool::Worker nvrtc_worker;  // started only if this thread meets an NVRTC job
    std::unique_lock lock(mutex_);
    for (;;) {
      if (!interrupted_ && readable(options_.cancel_fd)) interrupt();
      if (unfinished_ == 0) break;
      if (ready_.empty()) {
        changed_.wait_for(lock, std::chrono::milliseconds(50));
        continue;
      }
      auto next = std::min_element(ready_.begin(), ready_.end(), [this](size_t a, size_t b) {
        return position_[a] < position_[b];
      });
      size_t i = *next;
      ready_.erase(next);
      JobResult& result = results_[i];
      result.status = JobStatus::running;
      result.worker = thread;
      result.start_seconds = seconds_since_start();
      emit(Event::started, result);
      lock.unlock();
      Outcome outcome;
      try {
        outcome = run_job(i, nvrtc_worker);
      } catch (const std::exception& e) {  // before any tool ran: reading sources, the cache
        outcome = {JobStatus::failed, false, false, e.what(), {}};
      }
      lock.lock();
      settle(i, std::move(outcome));
      changed_.notify_all();
    }
    changed_.notify_all();
  }

  Outcome run_job(size_t i, pool::Worker& nvrtc_worker) {
    const Job& job = manifest_.jobs[i];
    std::vector<fs::path> inputs;
    for (const Input& input : job.inputs) {
      if (input.job.empty()) {
        inputs.push_back(input.file);
      } else {
        inputs.push_back(out_dir_ / manifest_.jobs[*manifest_.index_of(input.job)].output_name());
      }
    }
    fs::path output = out_dir_ / job.output_name();
    double timeout = options_.timeout.value_or(job.timeout_seconds);
    RunScope::Limits limits{.cancel_fd = options_.cancel_fd};
    if (timeout > 0) {
      limits.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout));
    }
    RunScope scope(limits);  // finding the tools runs them too (--version): under the limits
    std::optional<RunScope> making;  // the job's own tool runs, apart from those probes
    auto ran = [&]() -> const RunScope& { return making ? *making : scope; };
    try {
      detail::Prepared prepared = detail::prepare(job, options_, tools_);
      if (!prepared.skip_reason.empty()) {
        return {JobStatus::skipped, false, false, prepared.skip_reason, {}};
      }
      std::string key = cache_.enabled() ? detail::cache_key(job, prepared, inputs) : "";
      if (!key.empty()) {
        if (std::optional<std::string> bytes = cache_.get(key)) {
          internal::write_file_atomically(output, *bytes, output_mode(job.kind));
          return {JobStatus::cached, true, false, "", {}};
        }
      }
      TempDirectory work(
          {.custom_path = out_dir_ / fmt::format("{}{}-{}", kTempPrefix, ::getpid(), i)});
      fs::path made = work.path() / job.output_name();
      making.emplace(limits);
      detail::execute(job, options_, inputs, work.path(), made, nvrtc_worker);
      std::string bytes = internal::read_file(made, "the job made no output");
      if (!key.empty()) cache_.put(key, bytes);
      ::chmod(made.c_str(), output_mode(job.kind));
      internal::move_into_place(made, output);
      return with_commands(ran(), {JobStatus::done, false, false, "", {}});
    } catch (const Cancelled& e) {
      return with_commands(ran(), {JobStatus::skipped, false, true, e.what(), {}});
    } catch (const TimeoutError& e) {
      return with_commands(ran(), {JobStatus::timeout, false, false, e.what(), {}});
    } catch (const ChildProcessError& e) {
      return with_commands(ran(), {JobStatus::crashed, false, false, e.what(), {}});
    } catch (const ToolNotFound& e) {
      return with_commands(
          ran(),
          {JobStatus::skipped, false, false, fmt::format("toolchain absent: {}", e.what()), {}});
    } catch (const std::exception& e) {
      return with_commands(ran(), classify_failure(ran(), e.what()));
    }
  }

  static Outcome with_commands(const RunScope& scope, Outcome outcome) {
    for (const auto& record : scope.runs()) outcome.commands.push_back(record.command_line);
    if (outcome.status != JobStatus::done && readable(scope.limits().cancel_fd)) {
      outcome.interrupted = true;
      outcome.status = JobStatus::skipped;
    }
    return outcome;
  }

  // Called with the lock held.
  void settle(size_t i, Outcome outcome) {
    JobResult& result = results_[i];
    result.status = outcome.status;
    result.cached = outcome.cached;
    result.log = outcome.interrupted ? "interrupted" : std::move(outcome.log);
    result.commands = std::move(outcome.commands);
    result.end_seconds = seconds_since_start();
    result.seconds = result.end_seconds - result.start_seconds;
    if (outcome.status == JobStatus::done || outcome.status == JobStatus::cached) {
      result.output = out_dir_ / manifest_.jobs[i].output_name();
    }
    finish(i);
    if (outcome.interrupted) interrupt();
    if (outcome.status == JobStatus::done || outcome.status == JobStatus::cached) {
      for (size_t d : dependants_[i]) {
        if (--waiting_on_[d] == 0 && results_[d].status == JobStatus::pending) ready_.push_back(d);
      }
      return;
    }
    std::string why = outcome.status == JobStatus::skipped
                          ? fmt::format("dependency \"{}\" was skipped", result.name)
                          : fmt::format("dependency \"{}\" {}", result.name,
                                        outcome.status == JobStatus::timeout   ? "timed out"
                                        : outcome.status == JobStatus::crashed ? "crashed"
                                                                               : "failed");
    skip_dependants(i, why);
    bool failure = outcome.status == JobStatus::failed || outcome.status == JobStatus::timeout ||
                   outcome.status == JobStatus::crashed;
    if (failure && !options_.keep_going && !stopped_) {
      stopped_ = true;
      skip_pending(fmt::format("not started: \"{}\" {} (--keep-going builds the rest)", result.name,
                               status_name(outcome.status)));
    }
  }

  void skip_dependants(size_t i, const std::string& why) {
    for (size_t d : dependants_[i]) {
      if (results_[d].status != JobStatus::pending) continue;
      skip(d, why);
      skip_dependants(d, fmt::format("dependency \"{}\" was skipped", results_[d].name));
    }
  }

  void skip_pending(const std::string& why) {
    for (size_t i : manifest_.order) {
      if (results_[i].status == JobStatus::pending) skip(i, why);
    }
    ready_.clear();
  }

  void skip(size_t i, std::string why) {
    JobResult& result = results_[i];
    result.status = JobStatus::skipped;
    result.log = std::move(why);
    result.start_seconds = result.end_seconds = seconds_since_start();
    ready_.erase(std::remove(ready_.begin(), ready_.end(), i), ready_.end());
    finish(i);
  }

  void finish(size_t i) {
    --unfinished_;
    ++finished_;
    emit(Event::finished, results_[i]);
  }

  void interrupt() {
    if (interrupted_) return;
    interrupted_ = true;
    stopped_ = true;
    skip_pending("interrupted");
  }

  void emit(Event::Kind kind, const JobResult& job) {
    if (!options_.on_event) return;
    options_.on_event({kind, &job, finished_, results_.size()});
  }

  const Manifest& manifest_;
  const Options& options_;
  fs::path out_dir_;
  Cache cache_;
  detail::ToolIdentities tools_;
  Clock::time_point start_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<JobResult> results_;
  std::vector<size_t> waiting_on_;
  std::vector<std::vector<size_t>> dependants_;
  std::vector<size_t> position_;
  std::deque<size_t> ready_;
  size_t unfinished_ = 0;
  size_t finished_ = 0;
  bool stopped_ = false;
  bool interrupted_ = false;
};

int thread_count(const Manifest& manifest, const Options& options) {
  int wanted = options.jobs > 0 ? options.jobs : default_jobs();
  return std::max(1, std::min<int>(wanted, static_cast<int>(manifest.jobs.size())));
}

void check_options(const Options& options) {
  if (!options.launcher.empty()) Launcher::named(options.launcher);  // unknown or not installed
  if (options.timeout && !(*options.timeout >= 0)) {
    throw InvalidArgument(
        fmt::format("--timeout {}: must be 0 (none) or a number of seconds", *options.timeout));
  }
}

}  // namespace

std::string_view status_name(JobStatus status) {
  switch (status) {
    case JobStatus::pending:
      return "pending";
    case JobStatus::running:
      return "running";
    case JobStatus::done:
      return "done";
    case JobStatus::cached:
      return "cached";
    case JobStatus::failed:
      return "failed";
    case JobStatus::timeout:
      return "timeout";
    case JobStatus::crashed:
      return "crashed";
    case JobStatus::skipped:
      break;
  }
  return "skipped";
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
  remove_stale_temporaries(out_dir);
  Build build(manifest, options);
  return build.run(thread_count(manifest, options));
}

std::vector<PlannedJob> plan_build(const Manifest& manifest, const Options& options) {
  check_options(options);
  Cache cache = options.use_cache ? Cache::open() : Cache::disabled();
  detail::ToolIdentities tools(cache);
  fs::path out_dir = fs::absolute(options.out_dir);
  std::vector<PlannedJob> plan;
  for (size_t i : manifest.order) {
    const Job& job = manifest.jobs[i];
    PlannedJob planned{&job, out_dir / job.output_name(), false, ""};
    detail::Prepared prepared = detail::prepare(job, options, tools);
    planned.skip_reason = prepared.skip_reason;
    std::vector<fs::path> inputs;
    bool inputs_known = true;
    for (const Input& input : job.inputs) {
      fs::path path = input.job.empty()
                          ? input.file
                          : out_dir / manifest.jobs[*manifest.index_of(input.job)].output_name();
      inputs_known = inputs_known && internal::is_file(path);
      inputs.push_back(path);
    }
    if (cache.enabled() && prepared.skip_reason.empty() && inputs_known) {
      planned.cached = cache.get(detail::cache_key(job, prepared, inputs)).has_value();
    }
    plan.push_back(std::move(planned));
  }
  return plan;
}

}  // namespace kiln::build
