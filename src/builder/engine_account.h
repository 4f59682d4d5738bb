// Where a job's compiles ran, as the distributing engine (sccache, icecc, distcc) itself tells it:
// sccache's statistics, icecc's and distcc's client logs. Never inferred from timing or the
// configuration.
#pragma once

#include <string>
#include <vector>

namespace kiln::build::detail {

struct EngineAccount {
  // "remote" (every compile it ran went to a build server), "local", "mixed" (some of each), or
  // "engine-cache" (all served from the engine's cache); "" when the engine said nothing.
  std::string ran{};
  // In the engine's terms: "sccache: 2 compiles on 10.0.0.2:10501", "icecc: compiled locally".
  std::string detail{};
  // The build servers that ran its compiles.
  std::vector<std::string> hosts{};
};

}  // namespace kiln::build::detail
