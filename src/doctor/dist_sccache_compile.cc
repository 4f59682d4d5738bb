// kiln doctor --dist for sccache: one trivial C compile through the private client server, judged
// by sccache's own statistics (dist_compiles) and, when it did not run remotely, by its log.
#include <fmt/format.h>

#include "dist.h"
#include "internal/files.h"
#include "kiln/error.h"

namespace kiln::doctor::detail {
namespace {

constexpr const char* kRemoteFix =
    "the lines above are sccache's own reason. A build server needs root, bubblewrap and "
    "overlayfs (see its log); the compiler must be one sccache can package (gcc and clang are; "
    "others need [[dist.toolchains]] in the client config); docs/distributed.md";

long remote_compiles(const sccache::Stats& counts, std::string* hosts) {
  long total = 0;
  for (const auto& [host, count] : counts.dist) {
    if (count <= 0) continue;
    total += count;
    *hosts += (hosts->empty() ? "" : ", ") + host;
  }
  return total;
}

Finding auth_finding(const SccacheConfig& config, const SccacheLogReason& reason, bool remote) {
  Finding f{"sccache auth", Status::pass, "", ""};
  if (reason.token_rejected) {
    f.status = Status::fail;
    f.finding = fmt::format(
        "client token rejected by the scheduler (sccache's log: \"Error 401: Fixed token "
        "mismatch\"); sccache then fails every compile, printing nothing on the terminal");
    f.fix = fmt::format("set [dist.auth] token in {} to the scheduler's client_auth token",
                        config.path.string());
  } else if (remote) {
    f.finding = "the scheduler accepted the client token (a job was allocated)";
  } else {
    f.status = Status::warn;
    f.finding = "not verified: no job was allocated, and sccache's log shows no rejection";
  }
  return f;
}

// The trivial compile ran and ended: where, by the statistics.
Finding remote_finding(const RunResult& stats, const SccacheLogReason& reason,
                       const std::optional<sccache::Stats>& counts, const std::string& hosts) {
  Finding f{"sccache remote compile", Status::fail, "", kRemoteFix};
  if (!counts) {
    f.finding = "sccache --show-stats: unreadable statistics: " + stats.status_text() + " " +
                stats.output.substr(0, 300);
    f.fix.clear();
    return f;
  }
  if (!hosts.empty()) {
    f.status = Status::pass;
    f.finding = fmt::format("a trivial C compile ran on {} (sccache's dist_compiles)", hosts);
    f.fix.clear();
    return f;
  }
  f.finding = fmt::format(
      "the trivial C compile did not run remotely: sccache's dist_compiles stayed empty "
      "(dist_errors: {}). sccache's log:\n{}",
      counts->dist_errors, reason.lines.empty() ? "(nothing)" : reason.lines);
  return f;
}

}  // namespace

std::vector<Finding> sccache_compile_findings(sccache::Server& client, const SccacheConfig& config,
                                              std::chrono::seconds timeout) {
  std::string cc = probe_compiler();
  if (cc.empty()) return {no_probe_compiler("sccache remote compile")};
  internal::write_file(client.scratch() / "probe.c", unique_probe_source());
  // The first compile packages the compiler and uploads it: give it longer than a query.
  RunResult compile =
      client.command({cc, "-c", "probe.c", "-o", "probe.o"}, timeout * 3, client.scratch());
  SccacheLogReason reason = sccache_log_reason(client.log());
  RunResult stats = client.command({"--show-stats", "--stats-format", "json"}, timeout);
  std::optional<sccache::Stats> counts;
  try {
    if (stats.ok()) counts = sccache::parse_stats(stats.output);
  } catch (const UnexpectedOutput&) {  // NOLINT(bugprone-empty-catch): said as unreadable
  }
  std::string hosts;
  bool remote = counts && remote_compiles(*counts, &hosts) > 0;
  std::vector<Finding> findings{auth_finding(config, reason, remote)};
  if (!compile.ok() && !remote) {
    findings.push_back(
        {"sccache remote compile", Status::fail,
         fmt::format("the trivial compile ({}) {}{}{}", compile.command_line,
                     compile.timed_out ? "timed out: " : "failed: ", compile.status_text(),
                     reason.lines.empty() ? "" : ". sccache's log:\n" + reason.lines),
         reason.token_rejected ? "" : kRemoteFix});
    return findings;
  }
  findings.push_back(remote_finding(stats, reason, counts, hosts));
  return findings;
}

}  // namespace kiln::doctor::detail
