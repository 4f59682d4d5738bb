// Which launcher takes which job of a kiln build (route.h).
#include "route.h"

#include <fmt/format.h>

namespace kiln::build::detail {

std::vector<Route> routes_of(const Manifest& manifest, const Options& options) {
  std::vector<Route> routes;
  routes.reserve(manifest.jobs.size());
  for (const Job& job : manifest.jobs) routes.push_back(route_of(job, options));
  return routes;
}

Route route_of(const Job& job, const Options& options) {
  std::optional<LauncherKind> kind = job.launcher ? job.launcher : options.launcher;
  if (!kind) return {};
  std::string_view name = launcher_name(*kind);
  bool distributing = launcher_distributes(*kind);
  switch (job.kind) {
    case JobKind::object:
      return {.launcher = kind, .distributes = distributing};
    case JobKind::shared:
    case JobKind::executable:
      if (job.toolchain == Toolchain::ndk && job.kind == JobKind::shared) {
        return {.why_local = "the NDK's shared libraries are built without a launcher"};
      }
      return {.launcher = kind,
              .why_local = distributing ? "a compile that also links runs locally" : ""};
    case JobKind::cuda:
      if (job.backend == cuda::Backend::nvrtc) {
        return {.why_local =
                    "NVRTC compiles in kiln's process: nothing can send them to another machine"};
      }
      if (*kind != LauncherKind::sccache)
        return {.why_local = fmt::format("{} does not take nvcc compiles (sccache does)", name)};
      // nvcc runs cicc twice for a fatbin of an arch-specific target (sm_90a, sm_100f), the
      // second pass reading the first's .module_id, which sccache's split of the steps loses now
      // and then (sccache 0.16, nvcc 13: a third of such compiles failed, with or without a
      // cluster). Other fatbins, cubins and ptx went through every time.
      if (job.format == cuda::Format::fatbin &&
          (job.arch.ends_with('a') || job.arch.ends_with('f'))) {
        return {.why_local = fmt::format(
                    "sccache fails nvcc --fatbin for an arch-specific target ({}) now and then "
                    "(a .module_id it looks for is missing): cubin and ptx go through it",
                    job.arch)};
      }
      return {.launcher = kind, .distributes = true};
    default:
      break;
  }
  return {.why_local = fmt::format("{} jobs run locally: {} takes C/C++ and nvcc compiles",
                                   kind_name(job.kind), name)};
}

}  // namespace kiln::build::detail
