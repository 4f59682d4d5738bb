// kiln doctor --dist for distcc: the program, its host list, and a trivial compile with
// DISTCC_FALLBACK=0 (so that it cannot quietly run here) whose verbose log names the host.
#include <fmt/format.h>

#include "dist.h"
#include "kiln/temp_directory.h"
#include "support.h"

namespace kiln::doctor::detail {
namespace {

Finding hosts_finding() {
  std::optional<std::pair<std::string, std::string>> hosts = distcc_hosts();
  if (!hosts) {
    return {"distcc hosts", Status::fail,
            "no distcc hosts: DISTCC_HOSTS is unset and no hosts file ($DISTCC_DIR/hosts, "
            "~/.distcc/hosts, /etc/distcc/hosts) names any, so distcc compiles locally",
            "set DISTCC_HOSTS to the build machines (e.g. \"10.0.0.2/4 10.0.0.3/4\"), each running "
            "distccd --allow <this machine>"};
  }
  return {"distcc hosts", Status::pass, fmt::format("{}: {}", hosts->first, hosts->second), ""};
}

Finding compile_finding(const std::string& distcc, std::chrono::seconds timeout) {
  std::string cc = probe_compiler();
  if (cc.empty()) return no_probe_compiler("distcc remote compile");
  Finding f{"distcc remote compile", Status::fail, "", ""};
  TempDirectory dir = probe_directory();
  RunResult compile =
      run({.argv = {distcc, cc, "-c", "probe.c", "-o", "probe.o"},
           .cwd = dir.path(),
           .env = {{"DISTCC_FALLBACK", "0"}, {"DISTCC_VERBOSE", "1"}, {"DISTCC_LOG", std::nullopt}},
           .timeout = timeout * 3});
  EngineVerdict verdict = distcc_verdict(compile.output);
  if (compile.ok() && !verdict.host.empty()) {
    f.status = Status::pass;
    f.finding = fmt::format("a trivial C compile ran on {} (distcc's log)", verdict.host);
    return f;
  }
  f.status = compile.ok() ? Status::warn : Status::fail;
  f.finding =
      fmt::format("the trivial compile ({}, DISTCC_FALLBACK=0) {}; distcc's log:\n{}",
                  compile.command_line, compile.ok() ? "ran on localhost" : compile.status_text(),
                  verdict.lines.empty() ? "(nothing)" : verdict.lines);
  f.fix =
      "check that distccd runs on the hosts (distccd --daemon --allow <this machine>/32), that "
      "TCP 3632 reaches them, and that they have the same compiler; distcc has no "
      "authentication: only a trusted network";
  return f;
}

}  // namespace

std::vector<Finding> check_distcc_dist(std::chrono::seconds timeout) {
  ToolFinding distcc = tool_finding("distcc", "apt-get install distcc");
  std::vector<Finding> findings{distcc.finding};
  if (!distcc.path) return findings;
  findings.push_back(hosts_finding());
  if (findings.back().status == Status::fail) return findings;
  findings.push_back(compile_finding(distcc.path->string(), timeout));
  return findings;
}

}  // namespace kiln::doctor::detail
