// Compiler launchers: a command put in front of every compile, with environment variables for
// it. ccache and sccache cache object files; distcc and icecc (icecream) send compiles to other
// machines when one is not enough. Those two have no authentication: use them only with a
// cluster you trust.
//
//   kiln::Launcher ccache = kiln::Launcher::ccache({{"CCACHE_DIR", "/var/cache/kiln-ccache"}});
//   kiln::cc::create_object("add.o", {"add.c"}, {.launcher = ccache});   // runs "ccache gcc ..."
//   kiln::Launcher cluster = kiln::Launcher::named("distcc", {{"DISTCC_HOSTS", "10.0.0.2/8"}});
//   kiln::launcher_kind("sccache");                 // LauncherKind::sccache; "make": std::nullopt
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

#include "kiln/enum_names.h"

namespace kiln {

// The launchers kiln knows, each a row of kLaunchers.
enum class LauncherKind { ccache, sccache, distcc, icecc };

// One row per launcher, in LauncherKind's order (kiln/enum_names.h).
struct LauncherRow {
  LauncherKind value;
  // What launcher_kind() reads, launcher_name() says, and Launcher::named accepts.
  std::string_view name;
  // Whether it may compile on another machine: sccache (with sccache-dist), distcc and icecc
  // may; ccache only caches. kiln build routes by it, and kiln doctor --dist checks these, the
  // first on PATH in this order when no engine is named.
  bool distributes;
};
inline constexpr LauncherRow kLaunchers[] = {{LauncherKind::ccache, "ccache", false},
                                             {LauncherKind::sccache, "sccache", true},
                                             {LauncherKind::distcc, "distcc", true},
                                             {LauncherKind::icecc, "icecc", true}};
static_assert(in_enum_order(kLaunchers, LauncherKind::icecc), "a row for every LauncherKind");

// The kind a name stands for ("sccache": LauncherKind::sccache); std::nullopt for any other name
// ("", "make", "CCACHE").
std::optional<LauncherKind> launcher_kind(std::string_view name);
// launcher_kind(name), or kiln::InvalidArgument "unknown launcher 'make' (expected one of: ccache,
// sccache, distcc, icecc)" for any other name: what a name given on a command line or to
// Launcher::named must be.
LauncherKind known_launcher_kind(std::string_view name);
// The kind's name in kLaunchers ("sccache"): what messages and cache keys say.
std::string_view launcher_name(LauncherKind kind);
// Whether the kind's launcher may send a compile to another machine (LauncherRow::distributes).
bool launcher_distributes(LauncherKind kind);
// The names of the launchers that distribute, in kLaunchers' order: "sccache", "distcc", "icecc".
std::vector<std::string> distributing_launcher_names();

struct Launcher {
  using Environment = std::map<std::string, std::optional<std::string>>;

  // The launcher's name ("ccache", ...), for messages and cache keys: launcher_name(kind).
  std::string name{};
  LauncherKind kind = LauncherKind::ccache;
  // Put before the compiler's argv: the launcher's absolute path, then any arguments of its own.
  std::vector<std::string> prefix{};
  // Added to the compiler's environment (std::nullopt unsets).
  Environment env{};

  static Launcher ccache(Environment env = {});
  static Launcher sccache(Environment env = {});
  static Launcher distcc(Environment env = {});
  static Launcher icecc(Environment env = {});
  // The launcher of that kind.
  static Launcher of(LauncherKind kind, Environment env = {});
  // The name of a row of kLaunchers; anything else is kiln::InvalidArgument (known_launcher_kind).
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

}  // namespace kiln
