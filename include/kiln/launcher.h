// Compiler launchers: a command put in front of every compile, with environment variables for
// it. ccache and sccache cache object files; distcc and icecc (icecream) send compiles to other
// machines when one is not enough. Those two have no authentication: use them only with a
// cluster you trust.
//
//   kiln::Launcher ccache = kiln::Launcher::ccache({{"CCACHE_DIR", "/var/cache/kiln-ccache"}});
//   kiln::cc::create_object("add.o", {"add.c"}, {.launcher = ccache});   // runs "ccache gcc ..."
//   kiln::Launcher cluster = kiln::Launcher::named("distcc", {{"DISTCC_HOSTS", "10.0.0.2/8"}});
//
// A launcher is looked up on PATH when it is made: a missing one is kiln::ToolNotFound whose
// message is "<name> not found" (the seed's "ccache not found"), followed for sccache, distcc and
// icecc by where to get it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct Launcher {
  using Environment = std::map<std::string, std::optional<std::string>>;

  // The launcher's name ("ccache", ...), for messages and cache keys.
  std::string name{};
  // Put before the compiler's argv: the launcher's absolute path, then any arguments of its own.
  std::vector<std::string> prefix{};
  // Added to the compiler's environment (std::nullopt unsets).
  Environment env{};

  static Launcher ccache(Environment env = {});
  static Launcher sccache(Environment env = {});
  static Launcher distcc(Environment env = {});
  static Launcher icecc(Environment env = {});
  // One of "ccache", "sccache", "distcc", "icecc"; anything else is kiln::InvalidArgument.
  static Launcher named(std::string_view name, Environment env = {});

  // prefix + argv.
  std::vector<std::string> wrap(const std::vector<std::string>& argv) const;
};

// Variables kiln sets on a launcher to steer where it runs and what it logs, never what a
// compile makes (sccache's server socket, icecc's and distcc's client logs): cache keys leave
// them out.
inline constexpr std::string_view kLauncherPlumbing[] = {
    "SCCACHE_SERVER_UDS", "SCCACHE_SERVER_PORT", "SCCACHE_IDLE_TIMEOUT", "ICECC_LOGFILE",
    "ICECC_DEBUG",        "DISTCC_LOG",          "DISTCC_VERBOSE"};

// The names Launcher::named accepts.
inline constexpr std::string_view kLauncherNames[] = {"ccache", "sccache", "distcc", "icecc"};

}  // namespace kiln
