// kiln build's scheduler (runner.h): a fixed set of threads takes ready jobs in dependency order,
// hands each to the JobRunner with its deadline and the build's cancel descriptor, and settles
// what follows from how it went (dependants become ready or are skipped; without keep_going,
// nothing new starts after a failure; a cancel interrupts everything).
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "internal/deadline.h"
#include "internal/fd.h"
#include "kiln/error.h"
#include "runner.h"

namespace kiln::build::detail {
namespace {

using Clock = std::chrono::steady_clock;

bool succeeded(JobStatus status) {
  return status == JobStatus::done || status == JobStatus::cached;
}

std::string_view ended_in_words(JobStatus status) {
  switch (status) {
    case JobStatus::timeout:
      return "timed out";
    case JobStatus::crashed:
      return "crashed";
    case JobStatus::skipped:
      return "was skipped";
    default:
      return "failed";
  }
}

// Where a job ran, from its attempt: kiln's cache, else what its launcher accounted for, else
// (no launcher, or one that says nothing) locally; "" when nothing of it ran.
void record_where(JobResult& result, const Attempt& attempt) {
  if (attempt.result == Attempt::Result::from_cache) {
    result.ran = attempt.from_remote ? "remote-cache" : "kiln-cache";
    return;
  }
  bool ran = attempt.result == Attempt::Result::made ||
             (attempt.result == Attempt::Result::failed && !attempt.commands.empty());
  if (!ran) return;
  result.ran = attempt.account.ran.empty() ? "local" : attempt.account.ran;
  result.engine = attempt.engine ? std::string(launcher_name(*attempt.engine)) : "";
  result.ran_detail = attempt.account.detail;
  result.remote_hosts = attempt.account.hosts;
}

class Scheduler {
 public:
  Scheduler(const Manifest& manifest, const Options& options, JobRunner& runner, int local_threads);
  Report run(int threads);

 private:
  void serve(int worker);
  // Puts the job at `position` of manifest.order among the ready ones.
  void make_ready(size_t position);
  // The next job to start (taken from the ready ones), or none while every ready job must run
  // locally and the local slots are full. Called with the lock held.
  std::optional<size_t> take_ready();
  // Job i's deadline from now, and what it is in words.
  RunScope::Limits limits_of(size_t i) const;
  void settle(size_t i, const Attempt& attempt);
  void skip_dependants(size_t i, const std::string& why);
  void skip_pending(const std::string& why);
  void skip(size_t i, std::string why);
  void finish(size_t i);
  void interrupt();
  void emit(Event::Kind kind, const JobResult& job);
  double seconds_since_start() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }

  const Manifest& manifest_;
  const Options& options_;
  JobRunner& runner_;
  Clock::time_point start_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<JobResult> results_;
  std::vector<size_t> waiting_on_;
  std::vector<std::vector<size_t>> dependants_;
  std::vector<size_t> position_;
  // Positions in manifest.order of the jobs ready to start, those that must run locally and
  // those that may run elsewhere apart: the first of either is the next to start.
  std::set<size_t> ready_;
  std::set<size_t> ready_elsewhere_;
  std::vector<bool> elsewhere_;  // by job: runner.runs_elsewhere()
  int local_threads_ = 0;
  int running_locally_ = 0;
  size_t unfinished_ = 0;
  size_t finished_ = 0;
  bool stopped_ = false;
  bool interrupted_ = false;
};

Scheduler::Scheduler(const Manifest& manifest, const Options& options, JobRunner& runner,
                     int local_threads)
    : manifest_(manifest),
      options_(options),
      runner_(runner),
      results_(manifest.jobs.size()),
      waiting_on_(manifest.jobs.size(), 0),
      dependants_(manifest.jobs.size()),
      position_(manifest.jobs.size(), 0),
      elsewhere_(manifest.jobs.size(), false),
      local_threads_(local_threads),
      unfinished_(manifest.jobs.size()) {
  for (size_t i = 0; i < manifest.jobs.size(); ++i) {
    const Job& job = manifest.jobs[i];
    results_[i].name = job.name;
    results_[i].kind = job.kind;
    elsewhere_[i] = runner.runs_elsewhere(i);
  }
  std::unordered_map<std::string_view, size_t> index = index_by_name(manifest);
  for (size_t i = 0; i < manifest.jobs.size(); ++i) {
    const Job& job = manifest.jobs[i];
    for (const std::string& dep : job.deps) {
      auto d = index.find(dep);
      if (d == index.end()) {
        throw InvalidArgument(
            fmt::format("job \"{}\" waits for unknown job \"{}\"", job.name, dep));
      }
      dependants_[d->second].push_back(i);
      ++waiting_on_[i];
    }
  }
  for (size_t p = 0; p < manifest.order.size(); ++p) position_[manifest.order[p]] = p;
  for (size_t p = 0; p < manifest.order.size(); ++p) {
    if (waiting_on_[manifest.order[p]] == 0) make_ready(p);
  }
}

void Scheduler::make_ready(size_t position) {
  (elsewhere_[manifest_.order[position]] ? ready_elsewhere_ : ready_).insert(position);
}

std::optional<size_t> Scheduler::take_ready() {
  bool local_free = running_locally_ < local_threads_ && !ready_.empty();
  std::set<size_t>* from = nullptr;
  if (local_free && (ready_elsewhere_.empty() || *ready_.begin() < *ready_elsewhere_.begin())) {
    from = &ready_;
  } else if (!ready_elsewhere_.empty()) {
    from = &ready_elsewhere_;
  } else {
    return std::nullopt;
  }
  size_t i = manifest_.order[*from->begin()];
  from->erase(from->begin());
  if (from == &ready_) ++running_locally_;
  return i;
}

Report Scheduler::run(int threads) {
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
    std::size_t* count[] = {&s.skipped, &s.skipped, &s.done,    &s.cached,
                            &s.failed,  &s.timeout, &s.crashed, &s.skipped};
    ++*count[static_cast<size_t>(r.status)];
  }
  return report;
}

RunScope::Limits Scheduler::limits_of(size_t i) const {
  const Job& job = manifest_.jobs[i];
  RunScope::Limits limits{.cancel_fd = options_.cancel_fd};
  double timeout = job.timeout_seconds;
  std::string given;
  if (options_.timeout) {
    timeout = *options_.timeout;
    given = "--timeout";
  } else if (job.timeout_given) {
    given = "the manifest's";
  } else if (elsewhere_[i]) {
    timeout = std::max(timeout, kDefaultDistributedTimeoutSeconds);
    given = "the default for a job that may run on another machine";
  } else {
    given = "the default";
  }
  limits.deadline = internal::deadline_after_seconds<Clock>(Clock::now(), timeout);
  limits.deadline_of = fmt::format("job \"{}\"'s limit of {:.3g}s, {}", job.name, timeout, given);
  return limits;
}

void Scheduler::serve(int worker) {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!interrupted_ && internal::readable(options_.cancel_fd)) interrupt();
    if (unfinished_ == 0) break;
    std::optional<size_t> next = take_ready();
    if (!next) {
      changed_.wait_for(lock, std::chrono::milliseconds(50));
      continue;
    }
    size_t i = *next;
    JobResult& result = results_[i];
    result.status = JobStatus::running;
    result.worker = worker;
    result.start_seconds = seconds_since_start();
    emit(Event::started, result);
    RunScope::Limits limits = limits_of(i);
    lock.unlock();
    Attempt attempt = runner_.run(i, limits, worker);
    lock.lock();
    if (!elsewhere_[i]) --running_locally_;
    settle(i, attempt);
    changed_.notify_all();
  }
  changed_.notify_all();
}

// Called with the lock held.
void Scheduler::settle(size_t i, const Attempt& attempt) {
  Verdict verdict = verdict_of(attempt, internal::readable(options_.cancel_fd));
  JobResult& result = results_[i];
  result.status = verdict.status;
  result.cached = attempt.result == Attempt::Result::from_cache;
  result.log = verdict.interrupted ? "interrupted" : attempt.log;
  if (!succeeded(verdict.status) && !verdict.interrupted) result.ending = attempt.ending;
  result.commands = attempt.commands;
  record_where(result, attempt);
  result.end_seconds = seconds_since_start();
  result.seconds = result.end_seconds - result.start_seconds;
  if (succeeded(verdict.status)) result.output = attempt.output;
  finish(i);
  if (verdict.interrupted) interrupt();
  if (succeeded(verdict.status)) {
    for (size_t d : dependants_[i]) {
      if (--waiting_on_[d] == 0 && results_[d].status == JobStatus::pending) {
        make_ready(position_[d]);
      }
    }
    return;
  }
  skip_dependants(i,
                  fmt::format("dependency \"{}\" {}", result.name, ended_in_words(verdict.status)));
  if (verdict.status != JobStatus::skipped && !options_.keep_going && !stopped_) {
    stopped_ = true;
    skip_pending(fmt::format("not started: \"{}\" {} (--keep-going builds the rest)", result.name,
                             status_name(verdict.status)));
  }
}

// Depth-first with a stack of its own: a chain of 100,000 jobs must not use 100,000 frames.
void Scheduler::skip_dependants(size_t i, const std::string& why) {
  std::vector<std::pair<size_t, size_t>> stack{{i, 0}};  // (job, next dependant to look at)
  while (!stack.empty()) {
    auto& [job, next] = stack.back();
    if (next == dependants_[job].size()) {
      stack.pop_back();
      continue;
    }
    size_t d = dependants_[job][next++];
    if (results_[d].status != JobStatus::pending) continue;
    skip(d, job == i ? why : fmt::format("dependency \"{}\" was skipped", results_[job].name));
    stack.emplace_back(d, 0);
  }
}

void Scheduler::skip_pending(const std::string& why) {
  for (size_t i : manifest_.order) {
    if (results_[i].status == JobStatus::pending) skip(i, why);
  }
  ready_.clear();
  ready_elsewhere_.clear();
}

void Scheduler::skip(size_t i, std::string why) {
  JobResult& result = results_[i];
  result.status = JobStatus::skipped;
  result.log = std::move(why);
  result.start_seconds = result.end_seconds = seconds_since_start();
  ready_.erase(position_[i]);
  ready_elsewhere_.erase(position_[i]);
  finish(i);
}

void Scheduler::finish(size_t i) {
  --unfinished_;
  ++finished_;
  emit(Event::finished, results_[i]);
}

void Scheduler::interrupt() {
  if (interrupted_) return;
  interrupted_ = true;
  stopped_ = true;
  skip_pending("interrupted");
}

void Scheduler::emit(Event::Kind kind, const JobResult& job) {
  if (!options_.on_event) return;
  options_.on_event({kind, &job, finished_, results_.size()});
}

}  // namespace

Verdict verdict_of(const Attempt& attempt, bool build_cancelled) {
  switch (attempt.result) {
    case Attempt::Result::made:
      return {JobStatus::done, false};
    case Attempt::Result::from_cache:
      return {JobStatus::cached, false};
    case Attempt::Result::skipped:
      return {JobStatus::skipped, false};
    case Attempt::Result::failed:
      break;
  }
  Ending::Kind kind = attempt.ending ? attempt.ending->kind : Ending::Kind::exited;
  if (build_cancelled || kind == Ending::Kind::cancelled) return {JobStatus::skipped, true};
  if (kind == Ending::Kind::timed_out) return {JobStatus::timeout, false};
  if (kind == Ending::Kind::signaled || attempt.compiler_crashed) {
    return {JobStatus::crashed, false};
  }
  return {JobStatus::failed, false};
}

std::unordered_map<std::string_view, std::size_t> index_by_name(const Manifest& manifest) {
  std::unordered_map<std::string_view, std::size_t> index;
  index.reserve(manifest.jobs.size());
  // The first job of a name wins, as Manifest::index_of has it.
  for (std::size_t i = 0; i < manifest.jobs.size(); ++i) index.emplace(manifest.jobs[i].name, i);
  return index;
}

Report schedule(const Manifest& manifest, const Options& options, int threads, JobRunner& runner,
                int local_threads) {
  int local = local_threads > 0 ? std::min(local_threads, threads) : threads;
  return Scheduler(manifest, options, runner, local).run(threads);
}

}  // namespace kiln::build::detail
