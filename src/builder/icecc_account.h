// Where icecream (icecc) ran a job's compiles, read back from the icecc client's own log.
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
//   EngineAccount account = icecc_account(read_file(work_dir / "icecc.log"));
//   // {"remote", "icecc: compiled on 10.77.0.3:10245", {"10.77.0.3:10245"}}
#pragma once

#include <filesystem>
#include <string_view>

#include "engine_account.h"
#include "kiln/launcher.h"

namespace kiln::build::detail {

// The variables that make icecc write the log icecc_account() reads to `log_file` (absolute: icecc
// opens a relative name against the compile's working directory): ICECC_LOGFILE and
// ICECC_DEBUG=debug. With a log file set, icecc writes its own messages there and no longer to
// the compile's stderr; the compiler's output is unchanged.
Launcher::Environment icecc_log_env(const std::filesystem::path& log_file);

// The account of every icecc run in `client_log`: ran is "remote" when each compile ran on a
// server (hosts: those servers, "address:port" as icecc names them, in order of first use),
// "local" when each ran here (detail: icecc's reasons, a fallback after a failed remote compile
// naming the server and the error), "mixed" when some of each; "" when the log holds no run
// that got as far as compiling (detail says so). Lines that are not icecc's are ignored; never
// throws for what the log holds.
EngineAccount icecc_account(std::string_view client_log);

}  // namespace kiln::build::detail
