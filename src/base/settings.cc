// kiln/settings.h: where a setting's value comes from, and the readers of its type.
#include "kiln/settings.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "internal/settings_file.h"
#include "kiln/error.h"

namespace kiln::settings {

namespace {

// The lock of flags() and of the warnings' memory.
std::mutex& mutex() {
  static std::mutex instance;
  return instance;
}

// Values set by this process's command line (set_by_flag), by name: the value and the flag.
std::map<std::string, std::pair<std::string, std::string>, std::less<>>& flags() {
  static std::map<std::string, std::pair<std::string, std::string>, std::less<>> instance;
  return instance;
}

// The variables warned about, each once per process.
std::set<std::string, std::less<>>& warned() {
  static std::set<std::string, std::less<>> instance;
  return instance;
}

// One warning per variable and process, on stderr.
void warn_once(std::string_view name, const std::string& message) {
  {
    std::lock_guard lock(mutex());
    if (!warned().emplace(name).second) return;
  }
  (void)std::fprintf(stderr, "kiln: warning: %s\n", message.c_str());
}

std::optional<std::string> environment(std::string_view name) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read-only use, as every reader of the environment
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// The settings file's values, read once per process; its problems are warnings, once.
const internal::SettingsFile& file() {
  static const internal::SettingsFile parsed = [] {
    std::optional<std::string> path = file_path();
    if (!path) return internal::SettingsFile{};
    internal::SettingsFile read = internal::read_settings_file(*path);
    for (const std::string& problem : read.problems)
      (void)std::fprintf(stderr, "kiln: warning: %s\n", problem.c_str());
    return read;
  }();
  return parsed;
}

std::string lowered(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<double> number_in_range(const Setting& setting, std::string_view text) {
  std::string copy(text);
  char* end = nullptr;
  double number = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(number)) {
    return std::nullopt;
  }
  if (setting.type == Type::bytes && number != std::floor(number)) return std::nullopt;
  bool above = setting.minimum_open ? number > setting.minimum : number >= setting.minimum;
  if (!above || number > setting.maximum) return std::nullopt;
  return number;
}

// The value's text as its type reads it; `where` names it in a problem.
std::optional<std::string> checked(const Value& value) {
  if (!value.text) return std::nullopt;
  std::string problem = invalid(value.setting->name, *value.text);
  if (problem.empty()) return value.text;
  if (value.origin == Origin::file || value.origin == Origin::flag) {
    problem = fmt::format("{} ({})", problem, value.where);
  }
  if (value.setting->invalid_is_error) throw InvalidArgument(problem);
  warn_once(value.setting->name,
            fmt::format("{}; using {}", problem,
                        value.setting->default_value.empty()
                            ? std::string("the default")
                            : fmt::format("the default, {}", value.setting->default_value)));
  return std::nullopt;
}

// The effective text of a setting of `type`: checked, else the default's.
std::optional<std::string> typed(std::string_view name, Type type) {
  Value found = value(name);
  if (found.setting->type != type) {
    throw InvalidArgument(fmt::format("setting {} is a {}, not a {}", name,
                                      type_name(found.setting->type), type_name(type)));
  }
  if (std::optional<std::string> text = checked(found)) return text;
  if (found.setting->default_value.empty()) return std::nullopt;
  return std::string(found.setting->default_value);
}

}  // namespace

std::string range_text(const Setting& setting) {
  if (setting.type != Type::seconds && setting.type != Type::bytes) return "";
  return fmt::format("in {}{}, {}]", setting.minimum_open ? "(" : "[", setting.minimum,
                     setting.maximum);
}

const Setting& find(std::string_view name) {
  for (const Setting& setting : table()) {
    if (setting.name == name) return setting;
  }
  throw InvalidArgument(fmt::format("kiln has no setting {}", name));
}

Value value(std::string_view name) {
  const Setting& setting = find(name);
  {
    std::lock_guard lock(mutex());
    if (auto it = flags().find(name); it != flags().end()) {
      return {&setting, it->second.first, Origin::flag, it->second.second};
    }
  }
  if (std::optional<std::string> text = environment(name)) {
    return {&setting, std::move(text), Origin::env, "environment"};
  }
  if (!setting.environment_only) {
    if (auto it = file().values.find(std::string(name)); it != file().values.end()) {
      return {&setting, it->second.text, Origin::file, it->second.where};
    }
  }
  return {&setting, std::nullopt, Origin::default_value, ""};
}

std::string invalid(std::string_view name, std::string_view text) {
  const Setting& setting = find(name);
  switch (setting.type) {
    case Type::flag:
    case Type::path:
    case Type::url:
      return "";
    case Type::choice: {
      std::string_view rest = setting.choices;
      while (!rest.empty()) {
        size_t bar = std::min(rest.find('|'), rest.size());
        if (rest.substr(0, bar) == text) return "";
        rest.remove_prefix(std::min(bar + 1, rest.size()));
      }
      std::string choices(setting.choices);
      std::replace(choices.begin(), choices.end(), '|', ' ');
      size_t last = choices.rfind(' ');
      if (last != std::string::npos) choices.replace(last, 1, " or ");
      return fmt::format("{} must be {}, not '{}'", name, choices, text);
    }
    case Type::seconds:
    case Type::bytes:
      if (number_in_range(setting, text)) return "";
      return fmt::format(
          "{} must be a {} {}, not '{}'", name,
          setting.type == Type::seconds ? "number of seconds" : "whole number of bytes",
          range_text(setting), text);
  }
  return "";
}

bool flag(std::string_view name) {
  Value found = value(name);
  if (found.setting->type != Type::flag) {
    throw InvalidArgument(
        fmt::format("setting {} is a {}, not a flag", name, type_name(found.setting->type)));
  }
  std::string text = lowered(found.text.value_or(std::string(found.setting->default_value)));
  for (std::string_view off : {"0", "false", "no", "off"}) {
    if (text == off) return false;
  }
  for (std::string_view on : {"1", "true", "yes", "on"}) {
    if (text == on) return true;
  }
  warn_once(name, fmt::format("{}='{}' is not 1/true/yes/on or 0/false/no/off: taken as on", name,
                              *found.text));
  return true;
}

std::optional<std::string> text(std::string_view name) {
  const Setting& setting = find(name);
  if (setting.type != Type::path && setting.type != Type::url && setting.type != Type::choice) {
    throw InvalidArgument(
        fmt::format("setting {} is a {}, not text", name, type_name(setting.type)));
  }
  return typed(name, setting.type);
}

std::optional<std::chrono::milliseconds> seconds(std::string_view name) {
  std::optional<std::string> text = typed(name, Type::seconds);
  if (!text) return std::nullopt;
  return std::chrono::milliseconds(std::llround(std::strtod(text->c_str(), nullptr) * 1000));
}

std::optional<std::uint64_t> bytes(std::string_view name) {
  std::optional<std::string> text = typed(name, Type::bytes);
  if (!text) return std::nullopt;
  return static_cast<std::uint64_t>(std::strtod(text->c_str(), nullptr));
}

void set_by_flag(std::string_view name, std::string_view value, std::string_view flag_name) {
  (void)find(name);
  if (std::string problem = invalid(name, value); !problem.empty()) {
    throw InvalidArgument(fmt::format("{}: {}", flag_name, problem));
  }
  std::lock_guard lock(mutex());
  flags()[std::string(name)] = {std::string(value), std::string(flag_name)};
}

std::map<std::string, std::string> child_environment() {
  std::map<std::string, std::string> vars;
  std::lock_guard lock(mutex());
  for (const auto& [name, set] : flags()) vars[name] = set.first;
  return vars;
}

std::optional<std::string> file_path() {
  if (std::optional<std::string> named = environment("KILN_CONFIG")) return named;
  if (std::optional<std::string> xdg = environment("XDG_CONFIG_HOME")) {
    return *xdg + "/kiln/kiln.conf";
  }
  if (std::optional<std::string> home = environment("HOME")) {
    return *home + "/.config/kiln/kiln.conf";
  }
  return std::nullopt;
}

}  // namespace kiln::settings

void kiln::internal::forget_settings_state() {
  std::lock_guard lock(settings::mutex());
  settings::flags().clear();
  settings::warned().clear();
}
