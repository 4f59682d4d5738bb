// distcc's account of one job: its client log (DISTCC_LOG with DISTCC_VERBOSE=1) says, per
// compile, the host that ran it ("compile add.c on 10.0.0.2:3632 completed ok") and when a
// compile fell back to this machine.
#pragma once

#include <filesystem>
#include <string_view>

#include "engine_account.h"
#include "kiln/launcher.h"

namespace kiln::build::detail {

// The environment that makes distcc write its client log to `log_file`.
Launcher::Environment distcc_log_env(const std::filesystem::path& log_file);

// Where the compiles of one job ran, from the log distcc_log_env() asked for.
EngineAccount distcc_account(std::string_view client_log);

}  // namespace kiln::build::detail
