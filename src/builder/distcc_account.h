// distcc's account of one job, from its client log as the toolchains layer reads it
// (kiln/distcc_log.h): per compile, the host that ran it, and the compiles that fell back
// to this machine.
#pragma once

#include <string_view>

#include "engine_account.h"
#include "kiln/distcc_log.h"

namespace kiln::build::detail {

// Where the compiles of one job ran, from the log distcc_log_env() asked for: "remote" naming the
// hosts, "local" (saying how many fell back), or "mixed". Only the compiles that completed ok
// count.
EngineAccount distcc_account(std::string_view client_log);

}  // namespace kiln::build::detail
