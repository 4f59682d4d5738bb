#include "cpu_wait.h"

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/error.h"

namespace kiln::internal {

std::optional<RunState> run_state(pid_t pid) {
  try {
    // "pid (comm) state ...": the name may hold spaces and parentheses, the state follows the
    // last ')'.
    std::string stat = read_file(fmt::format("/proc/{}/stat", pid));
    std::size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) return std::nullopt;
    // "on-CPU ns, runqueue wait ns, timeslices".
    std::string schedstat = read_file(fmt::format("/proc/{}/schedstat", pid));
    char* end = nullptr;
    std::uint64_t on_cpu = std::strtoull(schedstat.c_str(), &end, 10);
    if (end == schedstat.c_str()) return std::nullopt;
    return RunState{stat[close + 2] == 'R', on_cpu};
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace kiln::internal
