// Where a job's compiles ran, in the words of the distributing engine that ran them (sccache,
// icecc, distcc): kiln reads this from the engine's own stats or log, never guesses it.
//
//   EngineAccount account = icecc_account(read_file(log));
//   // {.ran = "remote", .detail = "compiled on 10.77.0.3:10245", .hosts = {"10.77.0.3:10245"}}
#pragma once

#include <string>
#include <vector>

namespace kiln::build::detail {

struct EngineAccount {
  std::string ran; /* "remote"|"local"|"mixed" */
  std::string detail;
  std::vector<std::string> hosts;
};

}  // namespace kiln::build::detail
