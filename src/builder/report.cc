// What kiln build reports: the --json results, the --trace file and the closing summary.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/named_output.h"
#include "kiln/build.h"
#include "kiln/text.h"

namespace kiln::build {
namespace {

nlohmann::json summary_json(const Report& report) {
  const Summary& s = report.summary;
  return {{"done", s.done},
          {"cached", s.cached},
          {"failed", s.failed},
          {"timeout", s.timeout},
          {"crashed", s.crashed},
          {"skipped", s.skipped},
          {"total", report.jobs.size()},
          {"seconds", s.seconds},
          {"jobs", report.threads},
          {"interrupted", s.interrupted},
          {"ok", s.ok()}};
}

// The part of a failed job's log a trace event carries: enough to see the error in Perfetto.
constexpr size_t kTraceLogBytes = 2000;

long long microseconds(double seconds) { return static_cast<long long>(seconds * 1e6); }

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
                    {"worker", job.worker}});
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
  std::vector<const JobResult*> ran;
  for (const JobResult& job : report.jobs) {
    if (job.worker >= 0 && job.status != JobStatus::skipped) ran.push_back(&job);
  }
  std::sort(ran.begin(), ran.end(),
            [](const JobResult* a, const JobResult* b) { return a->seconds > b->seconds; });
  if (!ran.empty()) {
    text += "slowest:";
    for (size_t i = 0; i < std::min<size_t>(5, ran.size()); ++i) {
      text += fmt::format("{} {} {:.2f} s", i == 0 ? "" : ",", ran[i]->name, ran[i]->seconds);
    }
    text += "\n";
  }
  bool header = false;
  for (const JobResult& job : report.jobs) {
    if (job.status != JobStatus::skipped || job.log == "interrupted") continue;
    if (!header) text += "skipped:\n";
    header = true;
    text += fmt::format("  {}: {}\n", job.name, job.log);
  }
  return text;
}

}  // namespace kiln::build
