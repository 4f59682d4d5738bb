// The manifest of `kiln build`: JSON text to checked jobs in dependency order (kiln/manifest.h).
//
// Parsing makes two passes over "jobs": the first only notes each job's name and kind, so that a
// job may name a later one in "inputs" or "deps"; the second checks every job fully, in manifest
// order, so the error reported is the first problem in the file. Cycles, which only the whole
// graph shows, are looked for last.
#include "kiln/manifest.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <span>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "internal/files.h"
#include "kiln/cuda.h"
#include "kiln/launcher.h"

namespace kiln::build {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;  // keeps keys in the order written, for messages

// Sets of kinds, one bit per kind.
using KindSet = unsigned;
constexpr KindSet bit(JobKind kind) { return 1U << static_cast<unsigned>(kind); }
constexpr KindSet kAllKinds = (1U << std::size(kJobKinds)) - 1;
// Kinds compiled from "sources" or "code".
constexpr KindSet kCompileKinds = kAllKinds & ~(bit(JobKind::static_library) | bit(JobKind::tar));
// Kinds that make exactly one translation unit, so take one source.
constexpr KindSet kOneSourceKinds = bit(JobKind::object) | bit(JobKind::llvm_ir) |
                                    bit(JobKind::cuda) | bit(JobKind::rocm_code_object);
// Kinds built by the C/C++ compiler ("cc").
constexpr KindSet kCcKinds = bit(JobKind::object) | bit(JobKind::shared) | bit(JobKind::executable);
// Kinds compiled by a host C/C++-style driver (gcc, clang, emcc): host compile options fit them.
constexpr KindSet kHostCompileKinds = kCcKinds | bit(JobKind::llvm_ir) | bit(JobKind::wasm);
constexpr KindSet kInputKinds = bit(JobKind::shared) | bit(JobKind::executable) |
                                bit(JobKind::wasm) | bit(JobKind::static_library) |
                                bit(JobKind::tar);
constexpr KindSet kNeedInputKinds = bit(JobKind::static_library) | bit(JobKind::tar);

constexpr bool contains(KindSet set, JobKind kind) { return (set & bit(kind)) != 0; }

// A job key: the kinds that may set it, and the kinds that inherit the defaults' value.
struct KeyRule {
  std::string_view key;
  KindSet kinds;
  KindSet from_defaults;
};

constexpr KeyRule kJobKeys[] = {
    {"name", kAllKinds, 0},
    {"kind", kAllKinds, 0},
    {"sources", kCompileKinds, 0},
    {"code", kCompileKinds, 0},
    {"language", kCompileKinds, 0},
    {"inputs", kInputKinds, 0},
    {"deps", kAllKinds, 0},
    {"options", kCompileKinds, kHostCompileKinds},
    {"timeout", kAllKinds, kAllKinds},
    {"cc", kHostCompileKinds, kCcKinds},
    {"launcher", kCcKinds, kCcKinds},
    {"toolchain", kCcKinds | bit(JobKind::static_library), kCcKinds | bit(JobKind::static_library)},
    {"arch", bit(JobKind::cuda) | bit(JobKind::rocm_code_object), bit(JobKind::cuda)},
    {"format", bit(JobKind::cuda), bit(JobKind::cuda)},
    {"backend", bit(JobKind::cuda), bit(JobKind::cuda)},
};

constexpr std::string_view kDefaultsKeys[] = {"timeout",   "cc",   "launcher", "options",
                                              "toolchain", "arch", "format",   "backend"};
constexpr std::string_view kTopLevelKeys[] = {"defaults", "jobs"};
constexpr std::string_view kCudaFormats[] = {"ptx", "cubin", "fatbin"};
constexpr std::string_view kCudaBackends[] = {"nvrtc", "nvcc"};

const KeyRule* rule_of(std::string_view key) {
  for (const KeyRule& rule : kJobKeys) {
    if (rule.key == key) return &rule;
  }
  return nullptr;
}

// The languages a kind compiles.
std::span<const std::string_view> languages_of_kind(JobKind kind) {
  static constexpr std::string_view kHost[] = {"c", "c++", "asm", "cuda"};
  static constexpr std::string_view kCOrCxx[] = {"c", "c++"};
  static constexpr std::string_view kCuda[] = {"cuda"};
  static constexpr std::string_view kRocm[] = {"opencl", "llvm-ir", "asm"};
  switch (kind) {
    case JobKind::object:
    case JobKind::shared:
    case JobKind::executable:
      return kHost;
    case JobKind::llvm_ir:
    case JobKind::wasm:
      return kCOrCxx;
    case JobKind::cuda:
      return kCuda;
    case JobKind::rocm_code_object:
      return kRocm;
    default:
      return {};
  }
}

// The kinds whose outputs a job of `kind` takes as "@name" inputs.
KindSet input_kinds_of(JobKind kind) {
  switch (kind) {
    case JobKind::shared:
    case JobKind::executable:
      return bit(JobKind::object) | bit(JobKind::static_library) | bit(JobKind::shared);
    case JobKind::wasm:
      return bit(JobKind::object) | bit(JobKind::static_library);
    case JobKind::static_library:
      return bit(JobKind::object) | bit(JobKind::tar);
    case JobKind::tar:
      return kAllKinds;
    default:
      return 0;
  }
}

template <typename Range>
bool has(const Range& range, std::string_view value) {
  return std::find(std::begin(range), std::end(range), value) != std::end(range);
}

// "a, b and c" (or "a, b or c").
std::string in_words(const std::vector<std::string_view>& words, std::string_view conjunction) {
  if (words.size() <= 1) return words.empty() ? "" : std::string(words[0]);
  std::span<const std::string_view> head(words.data(), words.size() - 1);
  return fmt::format("{} {} {}", fmt::join(head, ", "), conjunction, words.back());
}

std::string kinds_in_words(KindSet set, std::string_view conjunction) {
  std::vector<std::string_view> names;
  for (JobKind kind : kJobKinds) {
    if (contains(set, kind)) names.push_back(kind_name(kind));
  }
  return in_words(names, conjunction);
}

// "a string", "an array", ... for "must be X, not Y".
std::string a_type(const Json& value) {
  std::string_view name = value.type_name();
  if (value.is_null()) return "null";
  bool vowel = name.find_first_of("aeiou") == 0;
  return fmt::format("{} {}", vowel ? "an" : "a", name);
}

bool is_valid_name(std::string_view name) {
  if (name.empty() || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '+' || c == '-';
  });
}

bool is_rocm_arch(std::string_view arch) {
  if (!arch.starts_with("gfx") || arch.size() == 3) return false;
  return std::all_of(arch.begin() + 3, arch.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'); });
}

bool is_cuda_arch(const std::string& arch) {
  try {
    (void)cuda::compute_version_of_arch(arch);
    return true;
  } catch (const InvalidArgument&) {
    return false;
  }
}

// Line and column (1-based) of the 1-based byte `byte` of `text`; one past the end is allowed.
std::pair<std::size_t, std::size_t> line_and_column(std::string_view text, std::size_t byte) {
  std::size_t index = std::min(byte == 0 ? 0 : byte - 1, text.size());
  std::string_view before = text.substr(0, index);
  std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  std::size_t line_start = before.rfind('\n');
  std::size_t column = line_start == std::string_view::npos ? index + 1 : index - line_start;
  return {line, column};
}

// The value of a manifest's "defaults".
struct Defaults {
  double timeout = kDefaultTimeoutSeconds;
  std::vector<std::string> options;
  std::map<std::string, std::string, std::less<>> strings;  // cc, launcher, ... when given
};

class Parser {
 public:
  Parser(std::string_view origin, fs::path directory)
      : origin_(origin), directory_(std::move(directory)) {}

  Manifest parse(std::string_view text);

 private:
  [[noreturn]] void fail(std::string_view message) const {
    throw ManifestError(fmt::format("manifest {}: {}", origin_, message));
  }
  static std::string at(std::string_view where, std::string_view key) {
    return fmt::format("{}{}key \"{}\"", where, where.empty() ? "" : ": ", key);
  }

  Json parse_json(std::string_view text) const;
  void check_keys(const Json& object, std::string_view where,
                  std::span<const std::string_view> known) const;
  std::optional<std::string> string_at(const Json& object, std::string_view key,
                                       std::string_view where) const;
  std::optional<std::vector<std::string>> strings_at(const Json& object, std::string_view key,
                                                     std::string_view where) const;
  std::optional<double> timeout_at(const Json& object, std::string_view where) const;
  void check_setting(std::string_view key, const std::string& value, JobKind kind,
                     std::string_view where) const;
  fs::path existing_file(const std::string& relative, const std::string& where) const;

  void read_defaults(const Json& root);
  void note_names(const Json& jobs);
  Job read_job(const Json& entry, std::size_t index);
  std::string read_name(const Json& entry, std::size_t index) const;
  JobKind read_kind(const Json& entry, const std::string& where) const;
  void check_job_keys(const Json& entry, JobKind kind, const std::string& where) const;
  void read_sources(const Json& entry, Job& job, const std::string& where) const;
  void read_language(const Json& entry, Job& job, const std::string& where) const;
  void read_inputs(const Json& entry, Job& job, const std::string& where) const;
  void read_deps(const Json& entry, Job& job, const std::string& where) const;
  void read_settings(const Json& entry, Job& job, const std::string& where) const;
  std::size_t dependency(const std::string& name, const Job& job, const std::string& where) const;
  void check_output(const Job& job, std::size_t index, const std::string& where);
  std::vector<std::size_t> order(const std::vector<Job>& jobs) const;
  void check_cycles(const std::vector<Job>& jobs,
                    const std::vector<std::vector<std::size_t>>& edges) const;

  std::string origin_;
  fs::path directory_;
  Defaults defaults_;
  std::map<std::string, std::size_t, std::less<>> first_index_;  // name -> its first job
  std::vector<std::optional<JobKind>> kinds_;                    // by index, when valid
  std::map<fs::path, std::size_t> outputs_;                      // output name -> job
};

Json Parser::parse_json(std::string_view text) const {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    auto [line, column] = line_and_column(text, e.byte);
    // nlohmann's what() is "[json.exception.parse_error.N] parse error at ...: <detail>".
    std::string_view what = e.what();
    std::size_t colon = what.find(": ");
    std::string_view detail = colon == std::string_view::npos ? what : what.substr(colon + 2);
    fail(fmt::format("line {}, column {}: invalid JSON: {}", line, column, detail));
  } catch (const Json::exception& e) {  // a number too large for a double: no position given
    std::string_view what = e.what();
    std::size_t bracket = what.find("] ");
    fail(fmt::format("invalid JSON: {}",
                     bracket == std::string_view::npos ? what : what.substr(bracket + 2)));
  }
}

void Parser::check_keys(const Json& object, std::string_view where,
                        std::span<const std::string_view> known) const {
  for (const auto& item : object.items()) {
    if (!has(known, item.key())) {
      fail(fmt::format("{} is not a known key (known keys: {})", at(where, item.key()),
                       fmt::join(known, ", ")));
    }
  }
}

std::optional<std::string> Parser::string_at(const Json& object, std::string_view key,
                                             std::string_view where) const {
  auto it = object.find(std::string(key));
  if (it == object.end()) return std::nullopt;
  if (!it->is_string())
    fail(fmt::format("{}: must be a string, not {}", at(where, key), a_type(*it)));
  std::string value = it->get<std::string>();
  if (value.empty()) fail(fmt::format("{}: must not be empty", at(where, key)));
  return value;
}

std::optional<std::vector<std::string>> Parser::strings_at(const Json& object, std::string_view key,
                                                           std::string_view where) const {
  auto it = object.find(std::string(key));
  if (it == object.end()) return std::nullopt;
  if (!it->is_array()) {
    fail(fmt::format("{}: must be an array of strings, not {}", at(where, key), a_type(*it)));
  }
  std::vector<std::string> values;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const Json& element = (*it)[i];
    if (!element.is_string()) {
      fail(fmt::format("{}: element {} must be a string, not {}", at(where, key), i,
                       a_type(element)));
    }
    values.push_back(element.get<std::string>());
  }
  return values;
}

std::optional<double> Parser::timeout_at(const Json& object, std::string_view where) const {
  auto it = object.find("timeout");
  if (it == object.end()) return std::nullopt;
  if (!it->is_number()) {
    fail(fmt::format("{}: must be a number of seconds, not {}", at(where, "timeout"), a_type(*it)));
  }
  double seconds = it->get<double>();
  if (!std::isfinite(seconds) || seconds < 0) {
    fail(fmt::format("{}: must be a non-negative number of seconds (0: no limit), not {}",
                     at(where, "timeout"), it->dump()));
  }
  return seconds;
}

// Checks the value of launcher, toolchain, arch, format or backend (for a job of `kind`).
void Parser::check_setting(std::string_view key, const std::string& value, JobKind kind,
                           std::string_view where) const {
  auto refuse = [&](std::string_view what, std::span<const std::string_view> known) {
    fail(fmt::format("{}: \"{}\" is not {} (one of {})", at(where, key), value, what,
                     fmt::join(known, ", ")));
  };
  if (key == "launcher" && !has(kLauncherNames, value)) refuse("a launcher", kLauncherNames);
  if (key == "toolchain" && !has(kToolchainNames, value)) refuse("a toolchain", kToolchainNames);
  if (key == "format" && !has(kCudaFormats, value)) refuse("a CUDA format", kCudaFormats);
  if (key == "backend" && !has(kCudaBackends, value)) refuse("a CUDA backend", kCudaBackends);
  if (key == "arch" && kind == JobKind::cuda && !is_cuda_arch(value)) {
    fail(fmt::format("{}: \"{}\" is not a CUDA arch (such as sm_80, sm_90a or compute_80)",
                     at(where, key), value));
  }
  if (key == "arch" && kind == JobKind::rocm_code_object && !is_rocm_arch(value)) {
    fail(fmt::format("{}: \"{}\" is not an AMDGPU arch (such as gfx90a or gfx1100)", at(where, key),
                     value));
  }
}

fs::path Parser::existing_file(const std::string& relative, const std::string& where) const {
  fs::path path = (directory_ / relative).lexically_normal();
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) {
    fail(fmt::format("{}: '{}' does not exist", where, path.string()));
  }
  if (ec) fail(fmt::format("{}: cannot stat '{}': {}", where, path.string(), ec.message()));
  if (!fs::is_regular_file(status)) {
    fail(fmt::format("{}: '{}' is not a regular file", where, path.string()));
  }
  return path;
}

void Parser::read_defaults(const Json& root) {
  auto it = root.find("defaults");
  if (it == root.end()) return;
  if (!it->is_object()) {
    fail(fmt::format("{}: must be an object, not {}", at("", "defaults"), a_type(*it)));
  }
  const Json& defaults = *it;
  check_keys(defaults, "defaults", kDefaultsKeys);
  if (auto timeout = timeout_at(defaults, "defaults")) defaults_.timeout = *timeout;
  if (auto options = strings_at(defaults, "options", "defaults")) defaults_.options = *options;
  for (std::string_view key : kDefaultsKeys) {
    if (key == "timeout" || key == "options") continue;
    if (auto value = string_at(defaults, key, "defaults")) {
      check_setting(key, *value, JobKind::cuda, "defaults");  // a defaults' arch is CUDA's
      defaults_.strings.emplace(key, *value);
    }
  }
}

void Parser::note_names(const Json& jobs) {
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Json& entry = jobs[i];
    std::optional<JobKind> kind;
    if (entry.is_object()) {
      auto name = entry.find("name");
      if (name != entry.end() && name->is_string()) {
        first_index_.emplace(name->get<std::string>(), i);
      }
      auto kind_value = entry.find("kind");
      if (kind_value != entry.end() && kind_value->is_string()) {
        kind = kind_from_name(kind_value->get<std::string>());
      }
    }
    kinds_.push_back(kind);
  }
}

std::string Parser::read_name(const Json& entry, std::size_t index) const {
  std::string where = fmt::format("job {}", index);
  if (!entry.is_object()) fail(fmt::format("{}: must be an object, not {}", where, a_type(entry)));
  std::optional<std::string> name = string_at(entry, "name", where);
  if (!name) fail(fmt::format("{} is required", at(where, "name")));
  if (!is_valid_name(*name)) {
    fail(
        fmt::format("{}: \"{}\" is not a valid job name (it becomes a file name: letters, "
                    "digits, '_', '.', '+' and '-' only, not starting with '.')",
                    at(where, "name"), *name));
  }
  std::size_t first = first_index_.find(*name)->second;
  if (first != index) {
    fail(fmt::format("{}: jobs {} and {} are both named \"{}\"",
                     at(fmt::format("job \"{}\"", *name), "name"), first, index, *name));
  }
  return *name;
}

JobKind Parser::read_kind(const Json& entry, const std::string& where) const {
  std::optional<std::string> name = string_at(entry, "kind", where);
  if (!name) fail(fmt::format("{} is required", at(where, "kind")));
  std::optional<JobKind> kind = kind_from_name(*name);
  if (!kind) {
    fail(fmt::format("{}: \"{}\" is not a kind (kinds: {})", at(where, "kind"), *name,
                     kinds_in_words(kAllKinds, "and")));
  }
  return *kind;
}

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
  std::span<const std::string_view> allowed = languages_of_kind(job.kind);
  if (allowed.empty() || (job.sources.empty() && job.code.empty())) return;  // compiles nothing
  std::vector<std::string_view> allowed_words(allowed.begin(), allowed.end());
  std::string key = at(where, "language");
  std::string from;  // where the language came from, for the message
  if (std::optional<std::string> language = string_at(entry, "language", where)) {
    if (!has(kLanguages, *language)) {
      fail(fmt::format("{}: \"{}\" is not a language (languages: {})", key, *language,
                       fmt::join(kLanguages, ", ")));
    }
    job.language = *language;
  } else if (!job.sources.empty()) {
    key = at(where, "sources");
    std::optional<std::string_view> language = language_of(job.sources.front());
    if (!language) {
      fail(
          fmt::format("{}: cannot tell the language of '{}' from its extension; add \"language\" "
                      "({})",
                      key, job.sources.front().string(), in_words(allowed_words, "or")));
    }
    job.language = *language;
    from = fmt::format(" ('{}')", job.sources.front().filename().string());
  } else if (job.kind == JobKind::cuda) {
    job.language = "cuda";
  } else {
    fail(fmt::format("{} is required with \"code\" in {} jobs ({})", key, kind_name(job.kind),
                     in_words(allowed_words, "or")));
  }
  if (!has(allowed, job.language)) {
    fail(fmt::format("{}: {} jobs compile {}, not {}{}", key, kind_name(job.kind),
                     in_words(allowed_words, "or"), job.language, from));
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
  job.timeout_seconds = timeout_at(entry, where).value_or(defaults_.timeout);
  std::pair<std::string_view, std::string*> settings[] = {
      {"cc", &job.cc},     {"launcher", &job.launcher}, {"toolchain", &job.toolchain},
      {"arch", &job.arch}, {"format", &job.format},     {"backend", &job.backend}};
  for (auto& [key, field] : settings) {
    if (std::optional<std::string> value = string_at(entry, key, where)) {
      check_setting(key, *value, job.kind, where);
      *field = *value;
    } else if (contains(rule_of(key)->from_defaults, job.kind)) {
      auto it = defaults_.strings.find(key);
      if (it != defaults_.strings.end()) *field = it->second;
    }
  }
  if (job.toolchain == "host") job.toolchain.clear();
  if (job.kind == JobKind::cuda) {
    if (job.backend.empty()) job.backend = "nvrtc";
    if (job.format.empty()) job.format = job.backend == "nvcc" ? "ptx" : "cubin";
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

// Refuses the first dependency cycle found by a depth-first search from each job in manifest
// order; the message starts the cycle at its earliest job in the manifest.
void Parser::check_cycles(const std::vector<Job>& jobs,
                          const std::vector<std::vector<std::size_t>>& edges) const {
  enum class State { unseen, open, done };
  std::vector<State> state(jobs.size(), State::unseen);
  std::vector<std::pair<std::size_t, std::size_t>> stack;  // (job, next edge to follow)
  for (std::size_t root = 0; root < jobs.size(); ++root) {
    if (state[root] != State::unseen) continue;
    state[root] = State::open;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto [job, next] = stack.back();
      if (next == edges[job].size()) {
        state[job] = State::done;
        stack.pop_back();
        continue;
      }
      ++stack.back().second;
      std::size_t dep = edges[job][next];
      if (state[dep] == State::unseen) {
        state[dep] = State::open;
        stack.emplace_back(dep, 0);
        continue;
      }
      if (state[dep] == State::done) continue;
      std::vector<std::size_t> cycle;
      auto start = std::find_if(stack.begin(), stack.end(),
                                [dep](const auto& frame) { return frame.first == dep; });
      for (auto frame = start; frame != stack.end(); ++frame) cycle.push_back(frame->first);
      std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
      std::vector<std::string_view> names;
      for (std::size_t i : cycle) names.push_back(jobs[i].name);
      names.push_back(jobs[cycle.front()].name);
      const Job& first = jobs[cycle.front()];
      bool by_input = std::any_of(first.inputs.begin(), first.inputs.end(),
                                  [&](const Input& input) { return input.job == names[1]; });
      fail(fmt::format("{}: dependency cycle {}",
                       at(fmt::format("job \"{}\"", first.name), by_input ? "inputs" : "deps"),
                       fmt::join(names, " -> ")));
    }
  }
}

// Kahn's algorithm, always taking the earliest ready job in manifest order.
std::vector<std::size_t> Parser::order(const std::vector<Job>& jobs) const {
  std::vector<std::vector<std::size_t>> edges(jobs.size());
  std::vector<std::vector<std::size_t>> dependants(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    for (const std::string& dep : jobs[i].deps) {
      std::size_t d = first_index_.find(dep)->second;
      edges[i].push_back(d);
      dependants[d].push_back(i);
    }
  }
  check_cycles(jobs, edges);
  std::vector<std::size_t> waiting(jobs.size());
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    waiting[i] = edges[i].size();
    if (waiting[i] == 0) ready.push(i);
  }
  std::vector<std::size_t> result;
  while (!ready.empty()) {
    std::size_t i = ready.top();
    ready.pop();
    result.push_back(i);
    for (std::size_t dependant : dependants[i]) {
      if (--waiting[dependant] == 0) ready.push(dependant);
    }
  }
  return result;
}

Manifest Parser::parse(std::string_view text) {
  Json root = parse_json(text);
  if (!root.is_object())
    fail(fmt::format("the top level must be a JSON object, not {}", a_type(root)));
  check_keys(root, "", kTopLevelKeys);
  read_defaults(root);
  auto jobs = root.find("jobs");
  if (jobs == root.end()) fail(fmt::format("{} is required", at("", "jobs")));
  if (!jobs->is_array()) {
    fail(fmt::format("{}: must be an array of jobs, not {}", at("", "jobs"), a_type(*jobs)));
  }
  note_names(*jobs);
  Manifest manifest;
  manifest.directory = directory_;
  for (std::size_t i = 0; i < jobs->size(); ++i) manifest.jobs.push_back(read_job((*jobs)[i], i));
  manifest.order = order(manifest.jobs);
  return manifest;
}

}  // namespace

std::string_view kind_name(JobKind kind) {
  switch (kind) {
    case JobKind::object:
      return "object";
    case JobKind::shared:
      return "shared";
    case JobKind::executable:
      return "executable";
    case JobKind::static_library:
      return "static";
    case JobKind::llvm_ir:
      return "llvm-ir";
    case JobKind::cuda:
      return "cuda";
    case JobKind::rocm_code_object:
      return "rocm-co";
    case JobKind::wasm:
      return "wasm";
    case JobKind::tar:
      return "tar";
  }
  return "unknown";
}

std::optional<JobKind> kind_from_name(std::string_view name) {
  for (JobKind kind : kJobKinds) {
    if (kind_name(kind) == name) return kind;
  }
  return std::nullopt;
}

std::optional<std::string_view> language_of(const fs::path& source) {
  static constexpr std::pair<std::string_view, std::string_view> kExtensions[] = {
      {".c", "c"},     {".cc", "c++"}, {".cpp", "c++"},  {".cxx", "c++"},
      {".c++", "c++"}, {".C", "c++"},  {".cu", "cuda"},  {".ll", "llvm-ir"},
      {".s", "asm"},   {".S", "asm"},  {".cl", "opencl"}};
  std::string extension = source.extension().string();
  for (const auto& [suffix, language] : kExtensions) {
    if (suffix == extension) return language;
  }
  return std::nullopt;
}

fs::path Job::output_name() const {
  std::string extension;
  switch (kind) {
    case JobKind::object:
      extension = ".o";
      break;
    case JobKind::shared:
      extension = ".so";
      break;
    case JobKind::executable:
      break;
    case JobKind::static_library:
      extension = ".a";
      break;
    case JobKind::llvm_ir:
      extension = ".ll";
      break;
    case JobKind::cuda:
      extension =
          "." + (format.empty() ? std::string(backend == "nvcc" ? "ptx" : "cubin") : format);
      break;
    case JobKind::rocm_code_object:
      extension = ".hsaco";
      break;
    case JobKind::wasm:
      extension = ".wasm";
      break;
    case JobKind::tar:
      extension = ".tar";
      break;
  }
  return name + extension;
}

std::optional<std::size_t> Manifest::index_of(std::string_view name) const {
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].name == name) return i;
  }
  return std::nullopt;
}

Manifest parse_manifest_text(std::string_view json, const fs::path& directory,
                             std::string_view origin) {
  fs::path absolute = fs::absolute(directory).lexically_normal();
  return Parser(origin, absolute).parse(json);
}

Manifest parse_manifest(const fs::path& file) {
  std::error_code ec;
  fs::file_status status = fs::status(file, ec);
  if (status.type() == fs::file_type::not_found) {
    throw FileNotFound(fmt::format("manifest {}: no such file", file.string()));
  }
  if (ec) throw SystemError(fmt::format("stat manifest {}", file.string()), ec.value());
  if (!fs::is_regular_file(status)) {
    throw ManifestError(fmt::format("manifest {}: not a regular file", file.string()));
  }
  std::string text = internal::read_file(file, "cannot read manifest");
  fs::path directory = fs::absolute(file).lexically_normal().parent_path();
  Manifest manifest = parse_manifest_text(text, directory, file.string());
  manifest.file = file;
  return manifest;
}

}  // namespace kiln::build
