// The parent's side of warm worker templates (pool.h, prepare_template): the templates of this
// process, and forking a worker from one.
#pragma once

#include <optional>

#include "internal/spawn.h"

namespace kiln::internal {

// A worker forked, for `spec` (its argv is the worker program's command and the two worker
// arguments; its fds what the worker gets), from a ready template of this process with the
// same command and working directory, and an environment that differs at most in what the
// worker is handed anyway; std::nullopt when there is none or it could not fork (the reason goes
// to template_stats(), and to stderr with KILN_POOL_DEBUG=1). The worker is this process's
// child, in a process group of its own.
std::optional<Child> fork_from_template(const SpawnSpec& spec);

}  // namespace kiln::internal
