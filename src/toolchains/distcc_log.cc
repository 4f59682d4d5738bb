// distcc's client log read into its compiles (distcc_log.h).
#include "kiln/distcc_log.h"

#include <optional>
#include <utility>

#include "kiln/text.h"

namespace kiln {
namespace {

// The message of a distcc log line, after its "distcc[PID] " prefix; "" for any other line.
std::string_view message_of(std::string_view line) {
  if (!line.starts_with("distcc[")) return {};
  if (line.ends_with('\r')) line.remove_suffix(1);
  size_t end = line.find("] ");
  return end == std::string_view::npos ? std::string_view() : line.substr(end + 2);
}

// "compile a.c on HOST completed ok", or "ERROR: compile a.c on HOST failed"; std::nullopt for
// any other message ("compile from a.c to a.o" included). The last " on " ends the file's name,
// which may hold one.
std::optional<DistccCompile> compile_of(std::string_view message) {
  constexpr std::string_view kOk = " completed ok";
  constexpr std::string_view kFailed = " failed";
  if (message.starts_with("ERROR: ")) message.remove_prefix(7);
  if (!message.starts_with("compile ")) return std::nullopt;
  bool ok = message.ends_with(kOk);
  if (!ok && !message.ends_with(kFailed)) return std::nullopt;
  message.remove_suffix(ok ? kOk.size() : kFailed.size());
  size_t on = message.rfind(" on ");
  if (on == std::string_view::npos) return std::nullopt;
  std::string_view host = message.substr(on + 4);
  if (host.empty() || host.find(' ') != std::string_view::npos) return std::nullopt;
  return DistccCompile{.host = std::string(host), .ok = ok};
}

}  // namespace

Launcher::Environment distcc_log_env(const std::filesystem::path& log_file) {
  return {{"DISTCC_LOG", log_file.string()}, {"DISTCC_VERBOSE", "1"}};
}

DistccLog read_distcc_log(std::string_view log) {
  DistccLog read;
  // The lines `kiln doctor --dist` has always shown: errors, outcomes, fallbacks.
  read.lines = last_lines(log, {"ERROR", "completed ok", "failed", "Warning"}, 6);
  for (std::string_view rest = log; !rest.empty();) {
    size_t end = rest.find('\n');
    std::string_view message = message_of(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    if (message.starts_with("Warning: failed to distribute")) ++read.fell_back;
    if (std::optional<DistccCompile> compile = compile_of(message)) {
      read.compiles.push_back(std::move(*compile));
    }
  }
  return read;
}

}  // namespace kiln
