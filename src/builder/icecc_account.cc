#include "icecc_account.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::build::detail {
namespace {

// One line of the log: "ICECC[<pid>] <date> <time>: <message>".
struct Line {
  std::string_view pid;
  std::string_view message;
};

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

std::optional<Line> parse_line(std::string_view line) {
  constexpr std::string_view kPrefix = "ICECC[";
  if (!line.starts_with(kPrefix)) return std::nullopt;
  size_t close = line.find(']', kPrefix.size());
  if (close == std::string_view::npos) return std::nullopt;
  // The time "08:09:00" has colons too, but none followed by a space.
  size_t colon = line.find(": ", close);
  if (colon == std::string_view::npos) return std::nullopt;
  return Line{line.substr(kPrefix.size(), close - kPrefix.size()), trim(line.substr(colon + 2))};
}

// One icecc run (one compiler invocation).
struct Run {
  std::string host;          // the server the scheduler gave it, "" when none
  std::string local_reason;  // icecc's reason to compile here
  std::string failure;       // the remote error that made it compile here after all
  bool compiled_here = false;
};

std::string after(std::string_view message, std::string_view prefix) {
  return std::string(trim(message.substr(prefix.size())));
}

void read_message(Run& run, std::string_view message) {
  constexpr std::string_view kHost = "Have to use host ";
  constexpr std::string_view kForced = "local build forced by remote exception: ";
  constexpr std::string_view kException = "got exception ";
  if (message.starts_with(kHost)) {
    std::string_view rest = message.substr(kHost.size());
    run.host = std::string(rest.substr(0, rest.find(' ')));
  } else if (message.starts_with("invoking: ")) {
    run.compiled_here = true;
  } else if (message.starts_with(kForced)) {
    run.failure = after(message, kForced);
  } else if (message.starts_with(kException)) {
    run.failure = after(message, kException);
  } else if (message == "building myself, but telling localhost") {
    run.local_reason = "the scheduler gave the compile to this host";
  } else if (message == "no local daemon found") {
    run.local_reason = "no local iceccd answered";
  } else if (message.ends_with("building locally") || message.ends_with("running locally") ||
             message.ends_with("running locally.")) {
    run.local_reason = std::string(message);
  }
}

std::vector<Run> read_runs(std::string_view log) {
  std::vector<Run> runs;
  std::map<std::string, size_t, std::less<>> current;  // pid -> its latest run
  while (!log.empty()) {
    size_t end = log.find('\n');
    std::string_view text = log.substr(0, end);
    log = end == std::string_view::npos ? std::string_view{} : log.substr(end + 1);
    std::optional<Line> line = parse_line(text);
    if (!line) continue;
    if (line->message.starts_with("invoked as: ")) {
      current[std::string(line->pid)] = runs.size();
      runs.emplace_back();
      continue;
    }
    // Lines of a pid that never said "invoked as" are a run's helpers (the preprocessor fork).
    auto it = current.find(line->pid);
    if (it != current.end()) read_message(runs[it->second], line->message);
  }
  return runs;
}

std::string local_detail(const Run& run) {
  if (!run.failure.empty()) {
    std::string where = run.host.empty() ? "a remote compile" : "the remote compile on " + run.host;
    return "compiled here after " + where + " failed: " + run.failure;
  }
  if (!run.local_reason.empty()) return "compiled here (" + run.local_reason + ")";
  return "compiled here";
}

std::string describe(const Run& run) {
  if (run.compiled_here) return local_detail(run);
  if (!run.host.empty()) return "compiled on " + run.host;
  return "no compile logged (it stopped before compiling)";
}

// The distinct descriptions in order of first appearance, each with its count when above one.
std::string join_details(const std::vector<std::string>& details) {
  std::vector<std::pair<std::string, int>> counted;
  for (const std::string& d : details) {
    auto it = std::find_if(counted.begin(), counted.end(), [&](auto& c) { return c.first == d; });
    if (it == counted.end()) {
      counted.emplace_back(d, 1);
    } else {
      ++it->second;
    }
  }
  std::string text;
  for (const auto& [d, n] : counted) {
    if (!text.empty()) text += "; ";
    text += n > 1 ? d + " (" + std::to_string(n) + " compiles)" : d;
  }
  return text;
}

}  // namespace

Launcher::Environment icecc_log_env(const std::filesystem::path& log_file) {
  return {{"ICECC_LOGFILE", std::filesystem::absolute(log_file).string()},
          {"ICECC_DEBUG", "debug"}};
}

EngineAccount icecc_account(std::string_view client_log) {
  std::vector<Run> runs = read_runs(client_log);
  EngineAccount account;
  if (runs.empty()) {
    account.detail = "icecc: it logged no compile";
    return account;
  }
  size_t remote = 0;
  size_t local = 0;
  std::vector<std::string> details;
  for (const Run& run : runs) {
    details.push_back(describe(run));
    if (run.compiled_here) {
      ++local;
    } else if (!run.host.empty()) {
      ++remote;
      if (std::find(account.hosts.begin(), account.hosts.end(), run.host) == account.hosts.end()) {
        account.hosts.push_back(run.host);
      }
    }
  }
  if (remote > 0 && local > 0) {
    account.ran = "mixed";
  } else if (remote > 0) {
    account.ran = "remote";
  } else if (local > 0) {
    account.ran = "local";
  }
  account.detail = "icecc: " + join_details(details);
  return account;
}

}  // namespace kiln::build::detail
