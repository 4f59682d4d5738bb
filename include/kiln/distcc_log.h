// distcc's client log, and the variables that make the client write it: what the builder accounts
// a job's compiles by and what `kiln doctor --dist` judges the hosts by.
//
// With DISTCC_VERBOSE=1 distcc 3.4 writes "distcc[<pid>] <message>" lines (to DISTCC_LOG when it
// names a file, else to stderr); per compile, where it ran and how it ended:
//   "compile a.c on 10.0.0.2:3632 completed ok"          (or "... on localhost completed ok")
//   "ERROR: compile a.c on 10.0.0.2:3632 failed"         (the compiler failed there)
//   "Warning: failed to distribute a.c to 10.0.0.2:3632, running locally instead"
// and "cpp a.c on localhost completed ok" for the preprocessing step, which is no compile.
//
//   Launcher::Environment env = distcc_log_env(work_dir / "distcc.log");   // set on the compile
//   DistccLog log = read_distcc_log(read_file(work_dir / "distcc.log"));
//   // log.compiles: {{.host = "10.0.0.2:3632", .ok = true}}
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/launcher.h"

namespace kiln {

// The variables that make distcc write the log read_distcc_log() reads to `log_file`: DISTCC_LOG
// and DISTCC_VERBOSE=1.
Launcher::Environment distcc_log_env(const std::filesystem::path& log_file);

// One compile distcc ran (a host's compiler run, or the local one after a fallback).
struct DistccCompile {
  std::string host;  // as distcc names it: "10.0.0.2:3632" (from DISTCC_HOSTS), or "localhost"
  bool ok = false;   // "completed ok"; false: "failed"
};

// What a distcc client log says.
struct DistccLog {
  std::vector<DistccCompile> compiles;  // in the log's order
  int fell_back = 0;                    // compiles it could not distribute and ran here instead
  std::string lines;  // the last few lines that say where and why (errors, outcomes, warnings)
};

// Reads `log` (the text of the file distcc_log_env() named, or distcc's stderr). Lines that are
// not distcc's are ignored; never throws for what the log holds.
DistccLog read_distcc_log(std::string_view log);

}  // namespace kiln
