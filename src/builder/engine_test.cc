// The scheduler's rules (runner.h), driven by a scripted JobRunner: no compiler, no process, each
// test in milliseconds.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "kiln/manifest.h"
#include "runner.h"

namespace kiln::build::detail {
namespace {

using namespace std::chrono_literals;

// What the scripted runner does with one job.
struct Script {
  Attempt attempt{.result = Attempt::Result::made};
  std::chrono::milliseconds busy{0};  // how long it "runs"; a cancel or the deadline cuts it short
};

// A JobRunner that plays scripts: it waits like a tool would (ending early, as a killed tool does,
// when the cancel descriptor becomes readable or the deadline passes), records what ran and how
// many ran at once.
class ScriptedRunner final : public JobRunner {
 public:
  explicit ScriptedRunner(const Manifest& manifest) : manifest_(manifest) {}

  void script(const std::string& name, Script script) { scripts_[name] = std::move(script); }
  // Job `name` may run on another machine (runs_elsewhere).
  void elsewhere(const std::string& name) { elsewhere_.insert(name); }
  bool runs_elsewhere(std::size_t index) const override {
    return elsewhere_.count(manifest_.jobs[index].name) != 0;
  }

  Attempt run(std::size_t index, const RunScope::Limits& limits, int worker) override {
    const std::string& name = manifest_.jobs[index].name;
    bool local = !runs_elsewhere(index);
    raise_max(max_running_, ++running_);
    if (local) raise_max(max_local_, ++local_running_);
    {
      std::lock_guard lock(mutex_);
      ran_.push_back(name);
      workers_[name] = worker;
      limits_[name] = {limits.deadline_of, limits.deadline
                                               ? *limits.deadline - std::chrono::steady_clock::now()
                                               : std::chrono::nanoseconds::max()};
    }
    Script script = scripts_.count(name) ? scripts_.at(name) : Script{};
    Attempt attempt = wait(script, limits);
    if (local) --local_running_;
    --running_;
    return attempt;
  }

  std::vector<std::string> ran() const {
    std::lock_guard lock(mutex_);
    return ran_;
  }
  int max_running() const { return max_running_; }
  int max_local_running() const { return max_local_; }
  int worker_of(const std::string& name) const {
    std::lock_guard lock(mutex_);
    return workers_.at(name);
  }
  // Job `name`'s Limits::deadline_of and how far its deadline was when it started.
  std::pair<std::string, std::chrono::nanoseconds> limit_of(const std::string& name) const {
    std::lock_guard lock(mutex_);
    return limits_.at(name);
  }

 private:
  static void raise_max(std::atomic<int>& max, int now) {
    int seen = max.load();
    while (now > seen && !max.compare_exchange_weak(seen, now)) {
    }
  }
  static Attempt wait(const Script& script, const RunScope::Limits& limits) {
    auto until = std::chrono::steady_clock::now() + script.busy;
    if (limits.deadline && *limits.deadline < until) until = *limits.deadline;
    while (std::chrono::steady_clock::now() < until) {
      auto left =
          std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      pollfd fd{limits.cancel_fd, POLLIN, 0};
      if (::poll(&fd, limits.cancel_fd >= 0 ? 1 : 0, static_cast<int>(left.count())) > 0) {
        return {.result = Attempt::Result::failed, .ending = Ending::cancelled()};
      }
    }
    if (limits.deadline && std::chrono::steady_clock::now() >= *limits.deadline &&
        script.busy > 0ms) {
      return {.result = Attempt::Result::failed, .ending = Ending::timed_out(), .log = "late"};
    }
    return script.attempt;
  }

  const Manifest& manifest_;
  std::map<std::string, Script> scripts_;
  std::atomic<int> running_{0};
  std::atomic<int> max_running_{0};
  std::atomic<int> local_running_{0};
  std::atomic<int> max_local_{0};
  std::set<std::string> elsewhere_;
  mutable std::mutex mutex_;
  std::vector<std::string> ran_;
  std::map<std::string, int> workers_;
  std::map<std::string, std::pair<std::string, std::chrono::nanoseconds>> limits_;
};

// A manifest of jobs named by `spec`: "name" or "name<dep1,dep2" (inline C code, no file).
Manifest manifest_of(std::initializer_list<std::string> spec) {
  std::string jobs;
  for (const std::string& entry : spec) {
    std::string name = entry.substr(0, entry.find('<'));
    std::string deps;
    if (entry.find('<') != std::string::npos) {
      std::string list = entry.substr(entry.find('<') + 1);
      for (size_t start = 0; start <= list.size();) {
        size_t comma = std::min(list.find(',', start), list.size());
        deps += (deps.empty() ? "\"" : ", \"") + list.substr(start, comma - start) + "\"";
        start = comma + 1;
      }
    }
    jobs += (jobs.empty() ? "" : ",\n") + std::string("{\"name\": \"") + name +
            "\", \"kind\": \"object\", \"language\": \"c\", \"code\": \"int x;\"" +
            (deps.empty() ? "" : ", \"deps\": [" + deps + "]") + "}";
  }
  return parse_manifest_text("{\"jobs\": [" + jobs + "]}", ".", "test");
}

const JobResult& result_of(const Report& report, const std::string& name) {
  for (const JobResult& job : report.jobs) {
    if (job.name == name) return job;
  }
  throw std::out_of_range(name);
}

Attempt failure(std::optional<Ending> ending, bool compiler_crashed = false) {
  return {.result = Attempt::Result::failed,
          .ending = ending,
          .compiler_crashed = compiler_crashed,
          .log = "it broke"};
}

TEST(Scheduler, EveryJobRunsAfterItsDependencies) {
  Manifest m = manifest_of({"lib<a,b", "a", "b", "app<lib"});
  ScriptedRunner runner(m);
  Report report = schedule(m, {.keep_going = false}, 2, runner);
  std::vector<std::string> ran = runner.ran();
  ASSERT_EQ(ran.size(), 4U);
  auto at = [&](const std::string& n) {
    return std::find(ran.begin(), ran.end(), n) - ran.begin();
  };
  EXPECT_LT(at("a"), at("lib"));
  EXPECT_LT(at("b"), at("lib"));
  EXPECT_LT(at("lib"), at("app"));
  EXPECT_EQ(report.summary.done, 4U);
  EXPECT_TRUE(report.summary.ok());
}

TEST(Scheduler, AFailureSkipsItsDependantsNamingItAndStopsNewJobs) {
  Manifest m = manifest_of({"a", "b<a", "c<b", "d"});
  ScriptedRunner runner(m);
  runner.script("a", {.attempt = failure(Ending::exited(1))});
  Report report = schedule(m, {}, 1, runner);
  EXPECT_EQ(result_of(report, "a").status, JobStatus::failed);
  EXPECT_EQ(result_of(report, "a").log, "it broke");
  EXPECT_EQ(result_of(report, "b").status, JobStatus::skipped);
  EXPECT_EQ(result_of(report, "b").log, "dependency \"a\" failed");
  EXPECT_EQ(result_of(report, "c").log, "dependency \"b\" was skipped");
  EXPECT_EQ(result_of(report, "d").status, JobStatus::skipped) << "no --keep-going: d never starts";
  EXPECT_EQ(result_of(report, "d").log, "not started: \"a\" failed (--keep-going builds the rest)");
  EXPECT_EQ(runner.ran(), std::vector<std::string>{"a"});
  EXPECT_FALSE(report.summary.ok());
}

TEST(Scheduler, KeepGoingBuildsEverythingThatDoesNotDependOnAFailure) {
  Manifest m = manifest_of({"a", "b<a", "c", "d<c"});
  ScriptedRunner runner(m);
  runner.script("a", {.attempt = failure(Ending::signaled(11))});
  Report report = schedule(m, {.keep_going = true}, 2, runner);
  EXPECT_EQ(result_of(report, "a").status, JobStatus::crashed);
  EXPECT_EQ(result_of(report, "b").log, "dependency \"a\" crashed");
  EXPECT_EQ(result_of(report, "c").status, JobStatus::done);
  EXPECT_EQ(result_of(report, "d").status, JobStatus::done);
  EXPECT_EQ(report.summary.crashed, 1U);
  EXPECT_EQ(report.summary.skipped, 1U);
  EXPECT_EQ(report.summary.done, 2U);
}

TEST(Scheduler, AnAbsentToolchainSkipsItsDependantsButIsNoFailure) {
  Manifest m = manifest_of({"a", "b<a", "c"});
  ScriptedRunner runner(m);
  runner.script("a", {.attempt = {.result = Attempt::Result::skipped, .log = "toolchain absent"}});
  Report report = schedule(m, {}, 1, runner);
  EXPECT_EQ(result_of(report, "a").log, "toolchain absent");
  EXPECT_EQ(result_of(report, "b").log, "dependency \"a\" was skipped");
  EXPECT_EQ(result_of(report, "c").status, JobStatus::done) << "a skip does not stop the build";
  EXPECT_TRUE(report.summary.ok());
}

TEST(Scheduler, NeverMoreThanJobsRunAtOnce) {
  Manifest m = manifest_of({"a", "b", "c", "d", "e", "f", "g", "h"});
  ScriptedRunner runner(m);
  for (const char* name : {"a", "b", "c", "d", "e", "f", "g", "h"})
    runner.script(name, {.busy = 20ms});
  Report report = schedule(m, {}, 3, runner);
  EXPECT_EQ(report.summary.done, 8U);
  EXPECT_EQ(runner.max_running(), 3) << "three threads, eight ready jobs of 20 ms";
  EXPECT_EQ(report.threads, 3);
  for (const JobResult& job : report.jobs) {
    EXPECT_GE(job.worker, 0);
    EXPECT_LT(job.worker, 3);
    EXPECT_EQ(job.worker, runner.worker_of(job.name));
  }
}

TEST(Scheduler, AJobPastItsTimeoutIsATimeoutAndTheOverrideWins) {
  Manifest m = manifest_of({"slow", "after<slow"});
  ScriptedRunner runner(m);
  runner.script("slow", {.busy = 10s});
  auto start = std::chrono::steady_clock::now();
  Report report = schedule(m, {.timeout = 0.05, .keep_going = true}, 1, runner);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "the deadline ended it";
  EXPECT_EQ(result_of(report, "slow").status, JobStatus::timeout);
  EXPECT_EQ(result_of(report, "after").log, "dependency \"slow\" timed out");
  EXPECT_EQ(report.summary.timeout, 1U);
}

TEST(Scheduler, CancelInterruptsRunningJobsAndStartsNothingMore) {
  Manifest m = manifest_of({"a", "b", "c", "d"});
  ScriptedRunner runner(m);
  for (const char* name : {"a", "b", "c", "d"}) runner.script(name, {.busy = 10s});
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  std::thread ctrl_c([&] {
    std::this_thread::sleep_for(50ms);
    ASSERT_EQ(::write(fds[1], "x", 1), 1);
  });
  auto start = std::chrono::steady_clock::now();
  Report report = schedule(m, {.cancel_fd = fds[0]}, 2, runner);
  ctrl_c.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(report.summary.interrupted);
  EXPECT_FALSE(report.summary.ok());
  EXPECT_EQ(runner.ran().size(), 2U) << "the two running were cut short, no more started";
  for (const JobResult& job : report.jobs) {
    EXPECT_EQ(job.status, JobStatus::skipped) << job.name;
    EXPECT_EQ(job.log, "interrupted") << job.name;
  }
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(Scheduler, ACancelledBuildMakesAnyFailureAnInterruption) {
  Attempt crashed = failure(Ending::signaled(9));
  EXPECT_EQ(verdict_of(crashed, true).status, JobStatus::skipped);
  EXPECT_TRUE(verdict_of(crashed, true).interrupted);
  EXPECT_FALSE(verdict_of(crashed, false).interrupted);
}

TEST(Scheduler, PrecedenceIsCancelledThenTimeoutThenCrashedThenFailed) {
  EXPECT_TRUE(verdict_of(failure(Ending::cancelled()), false).interrupted);
  EXPECT_EQ(verdict_of(failure(Ending::timed_out(), true), false).status, JobStatus::timeout)
      << "a timeout wins over a crash report";
  EXPECT_EQ(verdict_of(failure(Ending::signaled(11)), false).status, JobStatus::crashed);
  EXPECT_EQ(verdict_of(failure(Ending::exited(4), true), false).status, JobStatus::crashed)
      << "gcc's internal compiler error: the driver exits, its compiler crashed";
  EXPECT_EQ(verdict_of(failure(Ending::exited(1)), false).status, JobStatus::failed);
  EXPECT_EQ(verdict_of(failure(std::nullopt), false).status, JobStatus::failed)
      << "no tool failed (a source could not be read)";
  EXPECT_EQ(verdict_of({.result = Attempt::Result::made}, true).status, JobStatus::done)
      << "a job that finished before the cancel keeps its result";
  EXPECT_EQ(verdict_of({.result = Attempt::Result::from_cache}, false).status, JobStatus::cached);
}

TEST(Scheduler, EventsCountEveryJobOnce) {
  Manifest m = manifest_of({"a", "b<a", "c"});
  ScriptedRunner runner(m);
  runner.script("a", {.attempt = failure(Ending::exited(2))});
  std::vector<std::pair<Event::Kind, std::string>> events;
  std::size_t last_count = 0;
  Options options{.keep_going = true, .on_event = [&](const Event& e) {
                    events.emplace_back(e.kind, e.job->name);
                    if (e.kind == Event::finished) last_count = e.finished_count;
                    EXPECT_EQ(e.total, 3U);
                  }};
  schedule(m, options, 1, runner);
  EXPECT_EQ(last_count, 3U);
  long finished = std::count_if(events.begin(), events.end(),
                                [](const auto& e) { return e.first == Event::finished; });
  EXPECT_EQ(finished, 3);
}

// A chain of 100,000 jobs, each waiting for the one before, whose first job fails: every other
// job is skipped (skipping walks the chain without recursion: 100,000 frames overflowed the stack).
TEST(Scheduler, AHundredThousandJobChainWhoseFirstJobFailsSkipsTheRest) {
  constexpr std::size_t kJobs = 100'000;
  Manifest m;  // assembled directly: parsing 100,000 jobs is the benchmark's (plan_bench) subject
  for (std::size_t i = 0; i < kJobs; ++i) {
    Job job;
    job.name = fmt::format("j{}", i);  // "j" + std::to_string(i): GCC 12 -Wrestrict at -O3
    if (i > 0) job.deps = {fmt::format("j{}", i - 1)};
    m.jobs.push_back(std::move(job));
    m.order.push_back(i);
  }
  ScriptedRunner runner(m);
  runner.script("j0", {.attempt = failure(Ending::exited(1))});
  Report report = schedule(m, {.keep_going = true}, 2, runner);
  EXPECT_EQ(runner.ran(), std::vector<std::string>{"j0"});
  EXPECT_EQ(report.summary.failed, 1U);
  EXPECT_EQ(report.summary.skipped, kJobs - 1);
  EXPECT_EQ(report.jobs[1].log, "dependency \"j0\" failed");
  EXPECT_EQ(report.jobs[kJobs - 1].log,
            "dependency \"j" + std::to_string(kJobs - 2) + "\" was skipped");
}

// Timeouts beyond what the clock can hold (1e10 s overflows nanoseconds; 1e300 and infinity
// more so) are no limit, not a deadline in the past.
TEST(Scheduler, ATimeoutTheClockCannotHoldIsNoLimit) {
  for (double seconds : {1e10, 1e300, 1e30, std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE(seconds);
    Manifest m = manifest_of({"a"});
    ScriptedRunner runner(m);
    runner.script("a", {.busy = 20ms});
    Report report = schedule(m, {.timeout = seconds}, 1, runner);
    EXPECT_EQ(result_of(report, "a").status, JobStatus::done) << result_of(report, "a").log;
  }
}

// Each job's limit is named where it came from. A job that may run on another machine and
// has no timeout of its own gets 300 s, not 60: a loaded machine packages a toolchain for minutes
// before its first remote compile (issue 27 item 14: "timed out" jobs of tiny files).
TEST(Scheduler, EachJobsLimitIsNamedAndADistributedOneWaitsForPackaging) {
  Manifest m = parse_manifest_text(
      R"({"jobs": [{"name": "here", "kind": "object", "language": "c", "code": "int x;"},
                   {"name": "there", "kind": "object", "language": "c", "code": "int x;"},
                   {"name": "given", "kind": "object", "language": "c", "code": "int x;",
                    "timeout": 10}]})",
      ".", "test");
  ScriptedRunner runner(m);
  runner.elsewhere("there");
  runner.elsewhere("given");
  schedule(m, {}, 1, runner, 1);
  auto near = [](std::chrono::nanoseconds left, double seconds) {
    double s = std::chrono::duration<double>(left).count();
    return s <= seconds && s > seconds - 5;
  };
  auto [here, here_left] = runner.limit_of("here");
  EXPECT_EQ(here, "job \"here\"'s limit of 60s, the default");
  EXPECT_TRUE(near(here_left, 60));
  auto [there, there_left] = runner.limit_of("there");
  EXPECT_EQ(there,
            "job \"there\"'s limit of 300s, the default for a job that may run on another machine");
  EXPECT_TRUE(near(there_left, 300));
  auto [given, given_left] = runner.limit_of("given");
  EXPECT_EQ(given, "job \"given\"'s limit of 10s, the manifest's");
  EXPECT_TRUE(near(given_left, 10));

  ScriptedRunner overridden(m);
  overridden.elsewhere("there");
  schedule(m, {.timeout = 2}, 1, overridden, 1);
  EXPECT_EQ(overridden.limit_of("there").first, "job \"there\"'s limit of 2s, --timeout");
  EXPECT_TRUE(near(overridden.limit_of("there").second, 2));
}

// With a launcher that distributes, -j counts the cluster's slots: jobs that may run elsewhere
// take the slots above the local ones, and local work never exceeds local_threads.
TEST(Scheduler, OnlyJobsThatMayRunElsewhereUseTheSlotsAboveTheLocalOnes) {
  Manifest m = manifest_of({"l0", "r0", "r1", "l1", "r2", "r3", "l2", "r4", "l3", "r5"});
  ScriptedRunner runner(m);
  for (const char* name : {"r0", "r1", "r2", "r3", "r4", "r5"}) runner.elsewhere(name);
  for (const Job& job : m.jobs) runner.script(job.name, {.busy = 150ms});
  Report report = schedule(m, {}, 6, runner, 2);
  EXPECT_TRUE(report.summary.ok());
  EXPECT_EQ(runner.ran().size(), 10U);
  EXPECT_LE(runner.max_local_running(), 2);
  EXPECT_GT(runner.max_running(), 2);  // the remote ones ran beside the two local ones
}

TEST(Scheduler, WithoutLocalThreadsEveryJobIsLocalAsBefore) {
  Manifest m = manifest_of({"a", "b", "c", "d"});
  ScriptedRunner runner(m);
  for (const Job& job : m.jobs) runner.script(job.name, {.busy = 100ms});
  schedule(m, {}, 4, runner);
  EXPECT_EQ(runner.max_local_running(), 4);
}

// Where a job ran is its runner's account, kiln's cache, or nothing for a job that never ran.
TEST(Scheduler, WhereAJobRanComesFromItsAttempt) {
  Manifest m = manifest_of({"remote", "cached", "plain", "absent"});
  ScriptedRunner runner(m);
  runner.script(
      "remote",
      {.attempt = {
           .result = Attempt::Result::made,
           .engine = LauncherKind::sccache,
           .account = {.ran = "remote", .detail = "sccache: 1 compile on h:1", .hosts = {"h:1"}}}});
  runner.script("cached", {.attempt = {.result = Attempt::Result::from_cache}});
  runner.script("absent", {.attempt = {.result = Attempt::Result::skipped, .log = "no cc"}});
  Report report = schedule(m, {}, 1, runner);
  const JobResult& remote = result_of(report, "remote");
  EXPECT_EQ(remote.ran, "remote");
  EXPECT_EQ(remote.engine, "sccache");
  EXPECT_EQ(remote.ran_detail, "sccache: 1 compile on h:1");
  EXPECT_EQ(remote.remote_hosts, std::vector<std::string>{"h:1"});
  EXPECT_EQ(result_of(report, "cached").ran, "kiln-cache");
  EXPECT_EQ(result_of(report, "plain").ran, "local");
  EXPECT_EQ(result_of(report, "plain").engine, "");
  EXPECT_EQ(result_of(report, "absent").ran, "");
  std::string json = report_json(report);
  EXPECT_NE(json.find("\"remote_hosts\": [\n        \"h:1\""), std::string::npos) << json;
  EXPECT_NE(summary_text(report).find("where: 1 kiln-cache, 1 local, 1 remote (sccache)"),
            std::string::npos)
      << summary_text(report);
}

}  // namespace
}  // namespace kiln::build::detail
