// The icecream (icecc) client's own log, and the variables that make the client write it: what the
// builder accounts a job's compiles by and what `kiln doctor --dist` judges the cluster by.
//
// icecc logs to a file when ICECC_LOGFILE names one (appending: several compiles of one job share
// it). At ICECC_DEBUG=debug, the level icecc_log_env() asks for, each icecc run writes
//   "invoked as: icecc gcc -c a.c -o a.o"                   once, first
//   "Have to use host 10.77.0.3:10245 - Job ID: 3 - ..."    when the scheduler gave it a server
//   "invoking: /usr/bin/gcc -c a.c -o a.o"                  when it compiled here after all
// with the reason for a local compile in the lines between ("building myself, but telling
// localhost" when the scheduler picked this host, "neither -c nor -S argument, building locally",
// "no local daemon found", "got exception Error 14 - ... (10.77.0.4)" or "local build forced by
// remote exception: ..." for a fallback after a remote failure). Each line is
// "ICECC[<pid>] <date> <time>: <message>"; runs are told apart by the pid.
//
//   Launcher::Environment env = icecc_log_env(work_dir / "icecc.log");   // set on the compile
//   IceccLog log = read_icecc_log(read_file(work_dir / "icecc.log"));
//   // log.runs: {{.host = "10.77.0.3:10245", .compiled_here = false}}
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/launcher.h"

namespace kiln {

// The variables that make icecc write the log read_icecc_log() reads to `log_file` (made absolute:
// icecc opens a relative name against the compile's working directory): ICECC_LOGFILE and
// ICECC_DEBUG=debug. With a log file set, icecc writes its own messages there and no longer to
// the compile's stderr; the compiler's output is unchanged.
Launcher::Environment icecc_log_env(const std::filesystem::path& log_file);

// One icecc run (one compiler invocation), from its "invoked as" line on.
struct IceccRun {
  std::string host;            // the server the scheduler gave it ("address:port"), "" when none
  std::string local_reason;    // why it compiled here, for a person ("" when icecc gave none)
  std::string failure;         // the remote error after which it compiled here ("" when none)
  bool compiled_here = false;  // it ran the compiler on this machine ("invoking: ...")

  // It compiled on the server it was given (or was still doing so when the log ends).
  bool remote() const { return !host.empty() && !compiled_here; }
};

// What an icecc client log says.
struct IceccLog {
  std::vector<IceccRun> runs;  // in the order they started
  bool no_daemon = false;      // some run logged "no local daemon found"
  std::string lines;           // the last few lines that say where and why (host, local, errors)
};

// Reads `log` (the text of the file icecc_log_env() named, or icecc's stderr). Lines that are not
// icecc's, and lines of a pid that never said "invoked as" (a run's preprocessor fork), start no
// run; a pid that says "invoked as" again starts a new one. Never throws for what the log holds.
IceccLog read_icecc_log(std::string_view log);

}  // namespace kiln
