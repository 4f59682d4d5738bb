// distcc's client log, read for where each compile ran.
#include "distcc_account.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::build::detail {
namespace {

// The message of a distcc log line, after its "distcc[PID] " prefix.
std::string_view message_of(std::string_view line) {
  if (!line.starts_with("distcc[")) return {};
  size_t end = line.find("] ");
  return end == std::string_view::npos ? std::string_view() : line.substr(end + 2);
}

}  // namespace

Launcher::Environment distcc_log_env(const std::filesystem::path& log_file) {
  return {{"DISTCC_LOG", log_file.string()}, {"DISTCC_VERBOSE", "1"}};
}

EngineAccount distcc_account(std::string_view log) {
  long remote = 0;
  long local = 0;
  long fell_back = 0;
  EngineAccount account;
  for (size_t start = 0; start < log.size();) {
    size_t end = std::min(log.find('\n', start), log.size());
    std::string_view message = message_of(log.substr(start, end - start));
    start = end + 1;
    if (message.starts_with("Warning: failed to distribute")) ++fell_back;
    // "compile add.c on HOST completed ok" (or "... failed").
    if (!message.starts_with("compile ")) continue;
    size_t on = message.rfind(" on ");
    if (on == std::string_view::npos) continue;
    std::string_view rest = message.substr(on + 4);
    std::string host(rest.substr(0, rest.find(' ')));
    if (host == "localhost") {
      ++local;
    } else {
      ++remote;
      if (std::find(account.hosts.begin(), account.hosts.end(), host) == account.hosts.end()) {
        account.hosts.push_back(host);
      }
    }
  }
  std::string hosts = fmt::format("{}", fmt::join(account.hosts, ", "));
  std::string fallback =
      fell_back > 0 ? fmt::format(" ({} could not be distributed: fell back)", fell_back) : "";
  if (remote > 0 && local == 0) {
    account.ran = "remote";
    account.detail = fmt::format("distcc: compiled on {}", hosts);
  } else if (remote > 0) {
    account.ran = "mixed";
    account.detail = fmt::format("distcc: {} on {}, {} locally{}", remote, hosts, local, fallback);
  } else {
    account.ran = "local";
    account.detail = local > 0 ? "distcc: compiled locally" + fallback
                               : "distcc: not a compile it distributes; ran locally";
  }
  return account;
}

}  // namespace kiln::build::detail
