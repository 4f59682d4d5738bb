// Which jobs of a kiln build go through the build's launcher (Options::launcher, or the job's
// own), and whether that launcher may compile them on another machine: sccache, distcc and icecc
// take C/C++ compiles, sccache also nvcc's; links, NVRTC and the rest run locally, and the route
// says why.
//
//   Route route = route_of(job, {.launcher = LauncherKind::sccache});
//   if (route.launcher) { /* compile through it; route.distributes: it may go elsewhere */ }
//   else if (!route.why_local.empty()) { /* "NVRTC compiles in kiln's process: ..." */ }
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/build.h"
#include "kiln/launcher.h"
#include "kiln/manifest.h"

namespace kiln::build::detail {

// Whether a job's compile goes through a launcher, and whether that may send it elsewhere.
struct Route {
  // The launcher it goes through; std::nullopt for none.
  std::optional<LauncherKind> launcher{};
  // The launcher may compile it on another machine (sccache, distcc, icecc over a compile): the
  // job does not count against the local cores.
  bool distributes = false;
  // Why a launcher the build names does not take this job ("" when it does, or none is named):
  // "NVRTC compiles in kiln's process: nothing can send them to another machine".
  std::string why_local{};
};

// The route of one job: through its own launcher, else the build's (Options::launcher).
Route route_of(const Job& job, const Options& options);
// Every job's route, by index: computed once per build.
std::vector<Route> routes_of(const Manifest& manifest, const Options& options);

}  // namespace kiln::build::detail
