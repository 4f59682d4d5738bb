// kiln settings [--json | --markdown]: every KILN_* setting with its value and where the value
// comes from (kiln/settings.h), as ccache's --show-config does; --markdown prints the reference
// table that docs/settings.md holds.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "kiln/remote_store.h"
#include "kiln/settings.h"
#include "kiln/text.h"

namespace kiln::cli {

namespace {

// What a value is shown as: a URL without its credentials.
std::string shown(const settings::Setting& setting, const std::string& text) {
  return setting.type == settings::Type::url ? redacted_url(text) : text;
}

// The value in effect, "" when the setting is unset without a default value.
std::string effective(const settings::Value& value) {
  if (value.text) return shown(*value.setting, *value.text);
  return std::string(value.setting->default_value);
}

void print_json() {
  nlohmann::json rows = nlohmann::json::array();
  for (const settings::Setting& setting : settings::table()) {
    settings::Value value = settings::value(setting.name);
    nlohmann::json row = {{"name", setting.name},
                          {"type", settings::type_name(setting.type)},
                          {"value", effective(value)},
                          {"origin", settings::origin_name(value.origin)},
                          {"where", value.where},
                          {"default", setting.default_value},
                          {"default_text", setting.default_text},
                          {"reader", setting.reader},
                          {"meaning", setting.meaning}};
    if (!setting.choices.empty()) row["choices"] = setting.choices;
    rows.push_back(std::move(row));
  }
  nlohmann::json report = {{"settings", rows}, {"file", settings::file_path().value_or("")}};
  std::cout << json_text(report, 2) << "\n";
}

void print_text() {
  size_t width = 0;
  for (const settings::Setting& setting : settings::table()) {
    width = std::max(width, setting.name.size());
  }
  for (const settings::Setting& setting : settings::table()) {
    settings::Value value = settings::value(setting.name);
    std::string origin(settings::origin_name(value.origin));
    if (value.origin == settings::Origin::file || value.origin == settings::Origin::flag) {
      origin += " " + value.where;
    } else if (value.origin == settings::Origin::default_value && !setting.default_text.empty()) {
      origin += " (" + std::string(setting.default_text) + ")";
    }
    std::string text = effective(value);
    std::cout << fmt::format("{:<{}}  {:<24}  {}\n", setting.name, width,
                             text.empty() ? "-" : printable(text), printable(origin));
  }
  std::cout << fmt::format("settings file: {}\n", settings::file_path().value_or("none (no HOME)"));
}

// A table cell: '|' would end the cell.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string settings_markdown() {
  std::string out =
      "| Variable | Type | Default | Read by | Meaning |\n| --- | --- | --- | --- | --- |\n";
  for (const settings::Setting& setting : settings::table()) {
    std::string type(settings::type_name(setting.type));
    if (!setting.choices.empty()) type += ": `" + cell(setting.choices) + "`";
    if (std::string range = settings::range_text(setting); !range.empty()) type += " " + range;
    std::string fallback = setting.default_value.empty()
                               ? cell(setting.default_text)
                               : fmt::format("`{}`", cell(setting.default_value));
    if (!setting.default_value.empty() && !setting.default_text.empty()) {
      fallback += " (" + cell(setting.default_text) + ")";
    }
    std::string meaning = cell(setting.meaning);
    if (setting.invalid_is_error) meaning += "; a wrong value is an error";
    if (setting.environment_only) meaning += "; environment only";
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", setting.name, type, fallback,
                       cell(setting.reader), meaning);
  }
  return out;
}

}  // namespace

void add_settings(CLI::App& app, int* status) {
  CLI::App* cmd = app.add_subcommand(
      "settings", "Every KILN_* setting: its value and where it comes from (docs/settings.md)");
  auto json = std::make_shared<bool>(false);
  auto markdown = std::make_shared<bool>(false);
  CLI::Option* as_json = cmd->add_flag("--json", *json, "The settings as JSON on stdout");
  cmd->add_flag("--markdown", *markdown, "The reference table of docs/settings.md")
      ->excludes(as_json);
  cmd->callback([status, json, markdown] {
    require_no_passthrough("settings");
    if (*json) {
      print_json();
    } else if (*markdown) {
      std::cout << settings_markdown();
    } else {
      print_text();
    }
    *status = kExitOk;
  });
}

}  // namespace kiln::cli
