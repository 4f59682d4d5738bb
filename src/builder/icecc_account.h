// Where icecream (icecc) ran a job's compiles, from the icecc client's own log as the toolchains
// layer reads it (kiln/icecc_log.h says what icecc writes and which variables make it).
//
//   Launcher::Environment env = icecc_log_env(work_dir / "icecc.log");   // set on the compile
//   EngineAccount account = icecc_account(read_file(work_dir / "icecc.log"));
//   // {"remote", "icecc: compiled on 10.77.0.3:10245", {"10.77.0.3:10245"}}
#pragma once

#include <string_view>

#include "engine_account.h"
#include "kiln/icecc_log.h"

namespace kiln::build::detail {

// The account of every icecc run in `client_log`: ran is "remote" when each compile ran on a
// server (hosts: those servers, "address:port" as icecc names them, in order of first use),
// "local" when each ran here (detail: icecc's reasons, a fallback after a failed remote compile
// naming the server and the error), "mixed" when some of each; "" when the log holds no run
// that got as far as compiling (detail says so). Lines that are not icecc's are ignored; never
// throws for what the log holds.
EngineAccount icecc_account(std::string_view client_log);

}  // namespace kiln::build::detail
