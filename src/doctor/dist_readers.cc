// Reading the engines' own words for kiln doctor --dist: sccache's config and log (its status
// and statistics: toolchains/sccache.h); icecc's and distcc's client logs; distcc's host list.
#include <algorithm>
#include <sstream>
#include <utility>

#include "dist.h"
#include "internal/files.h"
#include "kiln/distcc_log.h"
#include "kiln/icecc_log.h"
#include "kiln/text.h"

namespace kiln::doctor::detail {
namespace {

namespace fs = std::filesystem;

// The value of a TOML `key = "value"` (or 'value', or a bare word) line; "" when it has none.
std::string toml_value(std::string_view line, std::string_view key) {
  size_t equals = line.find('=');
  if (equals == line.npos || trimmed(line.substr(0, equals)) != key) return "";
  std::string value(trimmed(line.substr(equals + 1)));
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')) {
    size_t close = value.find(value.front(), 1);
    return value.substr(1, close == value.npos ? value.npos : close - 1);
  }
  return value.substr(0, value.find('#'));
}

}  // namespace

SccacheConfig parse_sccache_config(std::string_view toml) {
  SccacheConfig config;
  std::string table;
  std::istringstream lines{std::string(toml)};
  for (std::string line; std::getline(lines, line);) {
    std::string text(trimmed(line));
    if (text.empty() || text[0] == '#') continue;
    if (text[0] == '[') {
      table = trimmed(text.substr(1, text.find(']') - 1));
    } else if (table == "dist" && !toml_value(text, "scheduler_url").empty()) {
      config.scheduler_url = toml_value(text, "scheduler_url");
    } else if (table == "dist.auth" && !toml_value(text, "type").empty()) {
      config.auth_type = toml_value(text, "type");
    } else if (table == "dist.auth" && !toml_value(text, "token").empty()) {
      config.has_token = true;
    }
  }
  return config;
}

fs::path sccache_config_path() {
  if (std::optional<std::string> conf = internal::env("SCCACHE_CONF")) return *conf;
  if (std::optional<std::string> xdg = internal::env("XDG_CONFIG_HOME")) {
    return fs::path(*xdg) / "sccache" / "config";
  }
  return fs::path(internal::env("HOME").value_or("")) / ".config" / "sccache" / "config";
}

SccacheLogReason sccache_log_reason(std::string_view log) {
  SccacheLogReason reason;
  reason.token_rejected =
      log.find("Error 401") != log.npos || log.find("Fixed token mismatch") != log.npos;
  reason.lines = last_lines(
      log, {" ERROR ", " WARN ", "falling back", "Could not perform distributed compile"}, 6);
  return reason;
}

EngineVerdict icecc_verdict(std::string_view log) {
  kiln::IceccLog read = kiln::read_icecc_log(log);
  EngineVerdict verdict;
  verdict.no_daemon = read.no_daemon;
  verdict.lines = std::move(read.lines);
  auto here = [](const kiln::IceccRun& run) { return run.compiled_here; };
  if (std::any_of(read.runs.begin(), read.runs.end(), here)) return verdict;
  auto remote = std::find_if(read.runs.begin(), read.runs.end(),
                             [](const kiln::IceccRun& run) { return run.remote(); });
  if (remote != read.runs.end()) verdict.host = remote->host;
  return verdict;
}

EngineVerdict distcc_verdict(std::string_view log) {
  kiln::DistccLog read = kiln::read_distcc_log(log);
  EngineVerdict verdict;
  verdict.lines = std::move(read.lines);
  auto ok = std::find_if(read.compiles.begin(), read.compiles.end(),
                         [](const kiln::DistccCompile& compile) { return compile.ok; });
  if (ok != read.compiles.end() && ok->host != "localhost") verdict.host = ok->host;
  return verdict;
}

std::optional<std::pair<std::string, std::string>> distcc_hosts() {
  if (std::optional<std::string> hosts = internal::env("DISTCC_HOSTS")) {
    return std::pair<std::string, std::string>{"DISTCC_HOSTS", *hosts};
  }
  std::optional<std::string> dir = internal::env("DISTCC_DIR");
  if (!dir) {
    if (std::optional<std::string> home = internal::env("HOME")) dir = *home + "/.distcc";
  }
  std::vector<fs::path> files;
  if (dir) files.push_back(fs::path(*dir) / "hosts");
  files.emplace_back("/etc/distcc/hosts");
  for (const fs::path& file : files) {
    if (!internal::is_file(file)) continue;
    std::string words;
    std::istringstream lines(internal::read_file(file));
    for (std::string line; std::getline(lines, line);) {
      line = trimmed(line.substr(0, line.find('#')));
      if (!line.empty()) words += (words.empty() ? "" : " ") + line;
    }
    if (!words.empty()) return std::pair<std::string, std::string>{file.string(), words};
  }
  return std::nullopt;
}

}  // namespace kiln::doctor::detail
