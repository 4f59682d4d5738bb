// Runs the built `kiln` binary (KILN_BINARY, set by tests/CMakeLists.txt) the way a user would:
// stdout and stderr apart, a generous deadline, optional environment changes.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/process.h"

namespace kiln::testing {

inline RunResult kiln_cli(std::vector<std::string> args,
                          std::map<std::string, std::optional<std::string>> env = {}) {
  args.insert(args.begin(), KILN_BINARY);
  return run({.argv = std::move(args),
              .env = std::move(env),
              .merge_stderr = false,
              .timeout = std::chrono::seconds(120)});
}

}  // namespace kiln::testing
