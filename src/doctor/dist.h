// What the checks of `kiln doctor --dist` share, and the readers of the engines' own words (their
// configuration, status and logs), apart so that tests can feed them text.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/doctor.h"
#include "kiln/process.h"
#include "kiln/sccache.h"
#include "kiln/temp_directory.h"

namespace kiln::doctor::detail {

// The checks of one engine (check_dist picks one).
std::vector<Finding> check_sccache_dist(std::chrono::seconds timeout);
std::vector<Finding> check_icecc_dist(std::chrono::seconds timeout);
std::vector<Finding> check_distcc_dist(std::chrono::seconds timeout);

// The finding an engine's check opens with, named `tool`: the program's path on PATH and its
// version (pass), or, when it is not on PATH, a failure ("kiln build --launcher <tool> cannot
// run") whose fix is `install_hint`; `path` is std::nullopt then, and the check ends there.
struct ToolFinding {
  Finding finding;
  std::optional<std::filesystem::path> path;
};
ToolFinding tool_finding(const std::string& tool, std::string_view install_hint);

// The failing finding `name` (an engine's remote compile) when probe_compiler() found none.
Finding no_probe_compiler(std::string name);

// A temp dir holding probe.c (unique_probe_source()), for an engine's trivial compile.
TempDirectory probe_directory();

// A trivial C translation unit no cache has seen: a function named for this process, the time and
// a counter (a comment would not do: caches key the preprocessed text).
std::string unique_probe_source();

// The C compiler the probes compile with: $CC, else gcc, else cc on PATH; "" when none.
std::string probe_compiler();

// sccache's client configuration, as far as the doctor reads it: the [dist] and [dist.auth]
// tables of a TOML file (`key = "value"` lines).
struct SccacheConfig {
  std::filesystem::path path;  // the file read ("" when none was found)
  std::string scheduler_url;   // [dist] scheduler_url ("" when absent)
  std::string auth_type;       // [dist.auth] type ("" when absent)
  bool has_token = false;      // [dist.auth] token is set
};
SccacheConfig parse_sccache_config(std::string_view toml);

// Where sccache reads its client configuration: $SCCACHE_CONF, else
// $XDG_CONFIG_HOME/sccache/config, else ~/.config/sccache/config.
std::filesystem::path sccache_config_path();

// What sccache's log says about a distributed compile that did not happen: whether the scheduler
// rejected the client's token (sccache 0.16 logs "Error 401: Fixed token mismatch" and fails the
// compile), and the lines that say why.
struct SccacheLogReason {
  bool token_rejected = false;
  std::string lines;
};
SccacheLogReason sccache_log_reason(std::string_view log);

// Where a trivial compile ran, from the engine's own log as the toolchains layer reads it
// (kiln/icecc_log.h, distcc_log.h): the remote host ("" when it ran locally or not at all)
// and the lines that say so.
struct EngineVerdict {
  std::string host;
  bool no_daemon = false;  // icecc: "no local daemon found"
  std::string lines;
};
// icecc: the server of the first run that compiled on one; "" when any run compiled here (the
// scheduler chose this host, no daemon answered, or a remote failure made icecc compile here).
EngineVerdict icecc_verdict(std::string_view log);
// distcc: the host of the first compile that completed ok, "" when that was localhost.
EngineVerdict distcc_verdict(std::string_view log);

// The trivial compile through `client`'s server: "sccache auth" (the scheduler took the client's
// token) and "sccache remote compile" (the statistics' dist_compiles grew, else sccache's reason).
std::vector<Finding> sccache_compile_findings(sccache::Server& client, const SccacheConfig& config,
                                              std::chrono::seconds timeout);

// DISTCC_HOSTS, else the first hosts file distcc reads ($DISTCC_DIR/hosts or ~/.distcc/hosts,
// then /etc/distcc/hosts), as {where, hosts}; std::nullopt when none.
std::optional<std::pair<std::string, std::string>> distcc_hosts();

}  // namespace kiln::doctor::detail
