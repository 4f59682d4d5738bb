// Reading JSON values, "defaults" and the top level of a manifest (manifest_parser.h).
#include <algorithm>
#include <cmath>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/launcher.h"
#include "manifest_parser.h"
#include "manifest_rules.h"

namespace kiln::build::detail {
namespace {

// Line and column (1-based) of the 1-based byte `byte` of `text`; one past the end is allowed.
std::pair<std::size_t, std::size_t> line_and_column(std::string_view text, std::size_t byte) {
  std::size_t index = std::min(byte == 0 ? 0 : byte - 1, text.size());
  std::string_view before = text.substr(0, index);
  std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  std::size_t line_start = before.rfind('\n');
  std::size_t column = line_start == std::string_view::npos ? index + 1 : index - line_start;
  return {line, column};
}

}  // namespace

// "a string", "an array", ... for "must be X, not Y".
std::string a_type(const Json& value) {
  std::string_view name = value.type_name();
  if (value.is_null()) return "null";
  bool vowel = name.find_first_of("aeiou") == 0;
  return fmt::format("{} {}", vowel ? "an" : "a", name);
}

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
  auto refuse = [&](std::string_view what, const std::vector<std::string>& known) {
    fail(fmt::format("{}: \"{}\" is not {} (one of {})", at(where, key), value, what,
                     fmt::join(known, ", ")));
  };
  if (key == "launcher" && !launcher_kind(value)) refuse("a launcher", enum_names(kLaunchers));
  if (key == "toolchain" && !toolchain_from_name(value)) {
    refuse("a toolchain", enum_names(kToolchainNames));
  }
  if (key == "format" && !enum_value(cuda::kFormatNames, value)) {
    refuse("a CUDA format", enum_names(cuda::kFormatNames));
  }
  if (key == "backend" && !enum_value(cuda::kBackendNames, value)) {
    refuse("a CUDA backend", enum_names(cuda::kBackendNames));
  }
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
  defaults_.timeout = timeout_at(defaults, "defaults");
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

}  // namespace kiln::build::detail
