// Whether a process is waiting for a CPU: what the pool looks at when a call's deadline passes,
// so that on a loaded machine a worker that had its answer all but ready, but no CPU to finish
// it on, is not reported as timed out for want of one (TVM's own test of its executor gives a
// call 15 ms, which a worker waiting behind a dozen runnable processes on two cores can miss).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace kiln::internal {

struct RunState {
  bool runnable = false;        // running or waiting for a CPU (state R)
  std::uint64_t on_cpu_ns = 0;  // time it has run, in all
};

// The state of process `pid`'s main thread, from /proc/<pid>/stat and /proc/<pid>/schedstat;
// std::nullopt when either cannot be read (no such process, a kernel without schedstat).
std::optional<RunState> run_state(pid_t pid);

}  // namespace kiln::internal
