// What kiln build reports: the --json results, the --trace file and the closing summary.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "internal/named_output.h"
#include "kiln/build.h"
#include "kiln/text.h"

namespace kiln::build {
namespace {

// How many jobs ran where ("remote": 40, "local": 3, ...).
std::map<std::string, std::size_t> where_counts(const Report& report) {
  std::map<std::string, std::size_t> counts;
  for (const JobResult& job : report.jobs) {
    if (!job.ran.empty()) ++counts[job.ran];
  }
  return counts;
}

// The remote level's part of the summary; null without one.
nlohmann::json remote_json(const Report& report) {
  if (report.remote_cache.empty()) return nullptr;
  const RemoteCounters& r = report.remote;
  return {{"server", report.remote_cache},
          {"hits", r.hits},
          {"misses", r.misses},
          {"errors", r.errors},
          {"rejected", r.rejected},
          {"uploads", r.uploads},
          {"bytes_down", r.bytes_down},
          {"bytes_up", r.bytes_up},
          {"seconds", r.seconds}};
}

nlohmann::json summary_json(const Report& report) {
  const Summary& s = report.summary;
  return {{"done", s.done},
          {"ran", where_counts(report)},
          {"local_jobs", report.local_threads},
          {"cached", s.cached},
          {"failed", s.failed},
          {"timeout", s.timeout},
          {"crashed", s.crashed},
          {"skipped", s.skipped},
          {"total", report.jobs.size()},
          {"seconds", s.seconds},
          {"jobs", report.threads},
          {"interrupted", s.interrupted},
          {"ok", s.ok()},
          {"remote_cache", remote_json(report)}};
}

// The part of a failed job's log a trace event carries: enough to see the error in Perfetto.
constexpr size_t kTraceLogBytes = 2000;

std::string human_bytes(std::uint64_t bytes) {
  constexpr std::uint64_t kKiB = 1024;
  if (bytes < 10 * kKiB) return fmt::format("{} B", bytes);
  if (bytes < 10 * kKiB * kKiB) {
    return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / kKiB);
  }
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (kKiB * kKiB));
}

long long microseconds(double seconds) { return static_cast<long long>(seconds * 1e6); }

// Where the jobs ran, when a launcher took part: "where: 40 remote, 3 local, 2 engine-cache
// (sccache)", then each job a build's launcher did not take, once per reason.
std::string where_text(const Report& report) {
  std::set<std::string> engines;
  std::map<std::string, std::vector<std::string>> passed_over;  // reason -> jobs
  for (const JobResult& job : report.jobs) {
    if (!job.engine.empty()) engines.insert(job.engine);
    if (job.engine.empty() && !job.ran_detail.empty())
      passed_over[job.ran_detail].push_back(job.name);
  }
  if (engines.empty() && passed_over.empty()) return "";
  std::string text = "where:";
  bool first = true;
  for (const auto& [where, count] : where_counts(report)) {
    text += fmt::format("{} {} {}", first ? "" : ",", count, where);
    first = false;
  }
  if (!engines.empty()) text += fmt::format(" ({})", fmt::join(engines, ", "));
  text += "\n";
  for (const auto& [why, names] : passed_over) {
    constexpr size_t kNamed = 3;
    std::vector<std::string> shown(
        names.begin(), names.begin() + static_cast<std::ptrdiff_t>(std::min(names.size(), kNamed)));
    std::string more =
        names.size() > kNamed ? fmt::format(" and {} more", names.size() - kNamed) : "";
    text += fmt::format("  locally: {}{}: {}\n", fmt::join(shown, ", "), more, why);
  }
  return text;
}

}  // namespace

std::string report_json(const Report& report) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const JobResult& job : report.jobs) {
    jobs.push_back({{"name", job.name},
                    {"kind", kind_name(job.kind)},
                    {"status", status_name(job.status)},
                    {"seconds", job.seconds},
                    {"output", job.output.empty() ? nlohmann::json(nullptr)
                                                  : nlohmann::json(job.output.string())},
                    {"cached", job.cached},
                    {"command", job.commands},
                    {"log", job.log},
                    {"worker", job.worker},
                    {"ran", job.ran.empty() ? nlohmann::json(nullptr) : nlohmann::json(job.ran)},
                    {"engine", job.engine},
                    {"ran_detail", job.ran_detail},
                    {"remote_hosts", job.remote_hosts}});
  }
  nlohmann::json doc = {{"jobs", jobs}, {"summary", summary_json(report)}};
  return json_text(doc, 2) + "\n";
}

std::string trace_json(const Report& report) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 1},
                    {"tid", 0},
                    {"args", {{"name", "kiln build"}}}});
  int not_run = report.threads;  // the track of jobs that never ran
  for (int t = 0; t <= not_run; ++t) {
    std::string name = t < not_run ? fmt::format("worker {}", t) : "not run";
    events.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", t}, {"args", {{"name", name}}}});
  }
  for (const JobResult& job : report.jobs) {
    nlohmann::json args = {{"status", status_name(job.status)}, {"cached", job.cached}};
    if (!job.output.empty()) args["output"] = job.output.string();
    if (!job.log.empty() && job.status != JobStatus::done) {
      args["log"] = std::string(utf8_prefix(job.log, kTraceLogBytes));
    }
    events.push_back({{"name", job.name},
                      {"cat", kind_name(job.kind)},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", job.worker >= 0 ? job.worker : not_run},
                      {"ts", microseconds(job.start_seconds)},
                      {"dur", microseconds(job.end_seconds - job.start_seconds)},
                      {"args", args}});
  }
  nlohmann::json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return json_text(doc) + "\n";
}

void write_report_file(const std::filesystem::path& path, std::string_view text) {
  internal::write_named_output(path, text);
}

std::string summary_text(const Report& report) {
  const Summary& s = report.summary;
  std::string text = fmt::format(
      "kiln build: {} done, {} cached, {} failed, {} timed out, {} crashed, {} skipped in {:.2f} s "
      "(-j{}){}\n",
      s.done, s.cached, s.failed, s.timeout, s.crashed, s.skipped, s.seconds, report.threads,
      s.interrupted ? " -- interrupted" : "");
  if (!report.jobs_source.empty()) text += fmt::format("-j auto: {}\n", report.jobs_source);
  text += where_text(report);
  if (!report.remote_cache.empty()) {
    const RemoteCounters& r = report.remote;
    text += fmt::format(
        "remote cache {}: {} hits, {} misses, {} errors{}, {} down, {} uploaded ({}), "
        "{:.2f} s waiting for it\n",
        report.remote_cache, r.hits, r.misses, r.errors,
        r.rejected > 0 ? fmt::format(", {} rejected", r.rejected) : "", human_bytes(r.bytes_down),
        r.uploads, human_bytes(r.bytes_up), r.seconds);
  }
  std::vector<const JobResult*> ran;
  for (const JobResult& job : report.jobs) {
    if (job.worker >= 0 && job.status != JobStatus::skipped) ran.push_back(&job);
  }
  std::sort(ran.begin(), ran.end(),
            [](const JobResult* a, const JobResult* b) { return a->seconds > b->seconds; });
  if (!ran.empty()) {
    text += "slowest:";
    for (size_t i = 0; i < std::min<size_t>(5, ran.size()); ++i) {
      text += fmt::format("{} {} {:.2f} s", i == 0 ? "" : ",", printable(ran[i]->name),
                          ran[i]->seconds);
    }
    text += "\n";
  }
  bool header = false;
  for (const JobResult& job : report.jobs) {
    if (job.status != JobStatus::skipped || job.log == "interrupted") continue;
    if (!header) text += "skipped:\n";
    header = true;
    text += fmt::format("  {}: {}\n", printable(job.name), printable(job.log));
  }
  return text;
}

}  // namespace kiln::build
