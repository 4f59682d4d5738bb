// The icecc client's log read into runs (icecc_log.h).
#include "kiln/icecc_log.h"

#include <map>
#include <optional>

#include "kiln/text.h"

namespace kiln {
namespace {

// One line of the log: "ICECC[<pid>] <date> <time>: <message>".
struct Line {
  std::string_view pid;
  std::string_view message;
};

std::optional<Line> parse_line(std::string_view line) {
  constexpr std::string_view kPrefix = "ICECC[";
  if (!line.starts_with(kPrefix)) return std::nullopt;
  size_t close = line.find(']', kPrefix.size());
  if (close == std::string_view::npos) return std::nullopt;
  // The time "08:09:00" has colons too, but none followed by a space.
  size_t colon = line.find(": ", close);
  if (colon == std::string_view::npos) return std::nullopt;
  return Line{line.substr(kPrefix.size(), close - kPrefix.size()), trimmed(line.substr(colon + 2))};
}

std::string after(std::string_view message, std::string_view prefix) {
  return std::string(trimmed(message.substr(prefix.size())));
}

void read_message(IceccRun& run, std::string_view message) {
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

}  // namespace

Launcher::Environment icecc_log_env(const std::filesystem::path& log_file) {
  return {{"ICECC_LOGFILE", std::filesystem::absolute(log_file).string()},
          {"ICECC_DEBUG", "debug"}};
}

IceccLog read_icecc_log(std::string_view log) {
  IceccLog read;
  // The lines `kiln doctor --dist` has always shown: the host, a local build and its reason.
  read.lines = last_lines(log,
                          {"Have to use host", "building myself", "locally", "local daemon",
                           "scheduler", "Error", "error"},
                          6);
  std::map<std::string, size_t, std::less<>> current;  // pid -> index of its latest run
  for (std::string_view rest = log; !rest.empty();) {
    size_t end = rest.find('\n');
    std::optional<Line> line = parse_line(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    if (!line) continue;
    if (line->message == "no local daemon found") read.no_daemon = true;
    if (line->message.starts_with("invoked as: ")) {
      current[std::string(line->pid)] = read.runs.size();
      read.runs.emplace_back();
      continue;
    }
    // Lines of a pid that never said "invoked as" are a run's helpers (the preprocessor fork).
    auto it = current.find(line->pid);
    if (it != current.end()) read_message(read.runs[it->second], line->message);
  }
  return read;
}

}  // namespace kiln
