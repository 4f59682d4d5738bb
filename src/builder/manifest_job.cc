// Reading one job of a manifest: its keys, sources, language, inputs, deps and settings
// (manifest_parser.h).
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/cuda_messages.h"
#include "kiln/launcher.h"
#include "manifest_parser.h"
#include "manifest_rules.h"

namespace kiln::build::detail {

void Parser::check_job_keys(const Json& entry, JobKind kind, const std::string& where) const {
  std::vector<std::string_view> known;
  for (const KeyRule& rule : kJobKeys) known.push_back(rule.key);
  check_keys(entry, where, known);
  for (const auto& item : entry.items()) {
    const KeyRule* rule = rule_of(item.key());
    if (!contains(rule->kinds, kind)) {
      fail(fmt::format("{} applies to {} jobs, not to {} jobs", at(where, item.key()),
                       kinds_in_words(rule->kinds, "and"), kind_name(kind)));
    }
  }
}

void Parser::read_sources(const Json& entry, Job& job, const std::string& where) const {
  if (!contains(kCompileKinds, job.kind)) return;
  bool has_sources = entry.contains("sources");
  bool has_code = entry.contains("code");
  if (has_sources && has_code) {
    fail(fmt::format("{}: a job takes \"sources\" or \"code\", not both", at(where, "code")));
  }
  // A link-only job (shared, executable or wasm from "inputs") compiles nothing.
  if (!has_sources && !has_code) {
    if (contains(kInputKinds, job.kind) && entry.contains("inputs")) return;
    fail(fmt::format("{} is required for {} jobs (or \"code\"{})", at(where, "sources"),
                     kind_name(job.kind),
                     contains(kInputKinds, job.kind) ? ", or \"inputs\"" : ""));
  }
  if (has_code) {
    job.code = *string_at(entry, "code", where);
    return;
  }
  std::vector<std::string> sources = *strings_at(entry, "sources", where);
  std::string key = at(where, "sources");
  if (sources.empty()) fail(fmt::format("{}: must not be empty", key));
  if (contains(kOneSourceKinds, job.kind) && sources.size() != 1) {
    fail(fmt::format("{}: {} jobs take exactly one source, not {}", key, kind_name(job.kind),
                     sources.size()));
  }
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty()) fail(fmt::format("{}: element {} is empty", key, i));
    job.sources.push_back(existing_file(sources[i], key));
  }
}

void Parser::read_language(const Json& entry, Job& job, const std::string& where) const {
  std::span<const Language> allowed = languages_of_kind(job.kind);
  if (allowed.empty() || (job.sources.empty() && job.code.empty())) return;  // compiles nothing
  std::string key = at(where, "language");
  std::string from;  // where the language came from, for the message
  if (std::optional<std::string> name = string_at(entry, "language", where)) {
    job.language = language_from_name(*name);
    if (!job.language) {
      fail(fmt::format("{}: \"{}\" is not a language (languages: {})", key, *name,
                       in_words(enum_names(kLanguageNames), "and")));
    }
  } else if (!job.sources.empty()) {
    key = at(where, "sources");
    job.language = language_of(job.sources.front());
    if (!job.language) {
      fail(
          fmt::format("{}: cannot tell the language of '{}' from its extension; add \"language\" "
                      "({})",
                      key, job.sources.front().string(), languages_in_words(allowed, "or")));
    }
    from = fmt::format(" ('{}')", job.sources.front().filename().string());
  } else if (job.kind == JobKind::cuda) {
    job.language = Language::cuda;
  } else {
    fail(fmt::format("{} is required with \"code\" in {} jobs ({})", key, kind_name(job.kind),
                     languages_in_words(allowed, "or")));
  }
  if (!has(allowed, *job.language)) {
    fail(fmt::format("{}: {} jobs compile {}, not {}{}", key, kind_name(job.kind),
                     languages_in_words(allowed, "or"), language_name(*job.language), from));
  }
}

// The index of the job `name` that `job` depends on through `where` (a key); refuses unknown
// names and the job itself.
std::size_t Parser::dependency(const std::string& name, const Job& job,
                               const std::string& where) const {
  auto it = first_index_.find(name);
  if (it == first_index_.end()) fail(fmt::format("{}: there is no job \"{}\"", where, name));
  if (name == job.name) {
    fail(fmt::format("{}: job \"{}\" depends on itself", where, name));
  }
  return it->second;
}

void Parser::read_inputs(const Json& entry, Job& job, const std::string& where) const {
  std::optional<std::vector<std::string>> inputs = strings_at(entry, "inputs", where);
  std::string key = at(where, "inputs");
  if (contains(kNeedInputKinds, job.kind) && (!inputs || inputs->empty())) {
    fail(fmt::format("{}: {} jobs need at least one input", key, kind_name(job.kind)));
  }
  if (!inputs) return;
  for (std::size_t i = 0; i < inputs->size(); ++i) {
    const std::string& input = (*inputs)[i];
    if (input.empty() || input == "@") fail(fmt::format("{}: element {} is empty", key, i));
    if (!input.starts_with('@')) {
      job.inputs.push_back({.job = {}, .file = existing_file(input, key)});
      continue;
    }
    std::string name = input.substr(1);
    std::optional<JobKind> input_kind = kinds_[dependency(name, job, key)];
    if (input_kind && !contains(input_kinds_of(job.kind), *input_kind)) {
      fail(fmt::format("{}: \"{}\" is a {} job; {} jobs take the outputs of {} jobs", key, input,
                       kind_name(*input_kind), kind_name(job.kind),
                       kinds_in_words(input_kinds_of(job.kind), "or")));
    }
    job.inputs.push_back({.job = name, .file = {}});
    if (!has(job.deps, name)) job.deps.push_back(name);
  }
}

void Parser::read_deps(const Json& entry, Job& job, const std::string& where) const {
  std::optional<std::vector<std::string>> deps = strings_at(entry, "deps", where);
  if (!deps) return;
  std::string key = at(where, "deps");
  for (const std::string& name : *deps) {
    if (name.starts_with('@')) {
      fail(fmt::format("{}: there is no job \"{}\" (\"deps\" takes plain job names)", key, name));
    }
    (void)dependency(name, job, key);
    if (!has(job.deps, name)) job.deps.push_back(name);
  }
}

void Parser::read_settings(const Json& entry, Job& job, const std::string& where) const {
  if (contains(rule_of("options")->from_defaults, job.kind)) job.options = defaults_.options;
  if (auto options = strings_at(entry, "options", where)) {
    job.options.insert(job.options.end(), options->begin(), options->end());
  }
  std::optional<double> timeout = timeout_at(entry, where);
  if (!timeout) timeout = defaults_.timeout;
  job.timeout_given = timeout.has_value();
  job.timeout_seconds = timeout.value_or(kDefaultTimeoutSeconds);
  std::map<std::string_view, std::string> values;  // the job's, else the defaults' it inherits
  for (std::string_view key : {"cc", "launcher", "toolchain", "arch", "format", "backend"}) {
    if (std::optional<std::string> value = string_at(entry, key, where)) {
      check_setting(key, *value, job.kind, where);
      values[key] = *value;
    } else if (contains(rule_of(key)->from_defaults, job.kind)) {
      auto it = defaults_.strings.find(key);
      if (it != defaults_.strings.end()) values[key] = it->second;
    }
  }
  job.cc = values["cc"];
  job.launcher = launcher_kind(values["launcher"]);  // check_setting() knew it
  job.arch = values["arch"];
  if (!values["toolchain"].empty()) job.toolchain = *toolchain_from_name(values["toolchain"]);
  if (job.kind == JobKind::cuda) {
    if (!values["backend"].empty()) job.backend = cuda::backend_from_name(values["backend"]);
    job.format = !values["format"].empty() ? cuda::format_from_name(values["format"])
                                           : cuda::default_format(job.backend);
    if (job.backend == cuda::Backend::nvrtc && job.format == cuda::Format::fatbin) {
      fail(fmt::format("{}: {}", where, cuda::nvrtc_fatbin_refusal(cuda::Audience::manifest)));
    }
  }
}

void Parser::check_output(const Job& job, std::size_t index, const std::string& where) {
  auto [it, added] = outputs_.emplace(job.output_name(), index);
  if (!added) {
    fail(fmt::format("{}: its output '{}' is also the output of job {}", at(where, "name"),
                     it->first.string(), it->second));
  }
}

Job Parser::read_job(const Json& entry, std::size_t index) {
  Job job;
  job.name = read_name(entry, index);
  std::string where = fmt::format("job \"{}\"", job.name);
  job.kind = read_kind(entry, where);
  check_job_keys(entry, job.kind, where);
  read_sources(entry, job, where);
  read_language(entry, job, where);
  read_inputs(entry, job, where);
  read_deps(entry, job, where);
  read_settings(entry, job, where);
  check_output(job, index, where);
  return job;
}

}  // namespace kiln::build::detail
