// What both kinds of worker template (template_serve.cc: one process's; template_service.cc: a
// service that outlives its processes) need to fork a worker that a task cannot tell from a
// started one.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "internal/fd.h"
#include "kiln/pool.h"

namespace kiln::internal {

int thread_count();
// "N threads run in it after its preparation (names...)".
std::string describe_threads();
// A throwaway fork, which runs the fork handlers of the libraries loaded here (OpenBLAS's stop
// its threads), then exits at once.
void run_fork_handlers(const pool::TemplateHooks& hooks);
// Holds the numbers of a worker's protocol descriptors with /dev/null, before anything is
// imported.
void reserve_worker_fds();
// Holds `fd`, a worker's protocol number that was free again, with /dev/null (a template
// service's first control socket moved away from it).
void reserve_fd(int fd);
// Why a worker's descriptors cannot go onto `targets` here; "" when they can.
std::string taken_target(const std::vector<int>& targets, int control);
// Why the template must not fork workers at all (a reserved number it lost); "" when none.
std::string held_reserved_fd(int control);
// In a forked worker: `fds` onto `targets`, the control socket and unused placeholders closed.
void place_fds(std::vector<UniqueFd>& fds, const std::vector<int>& targets, int control);
// A "fork" request: "fork", then a line per descriptor attached (in their order: the number it
// gets in the worker, or "cwd" for the directory the worker starts in) and "umask=<octal>", an
// empty line, then the worker's environment, a NAME=value a line.
struct ForkRequest {
  std::vector<int> targets;
  std::vector<UniqueFd> fds;  // each onto its target
  UniqueFd cwd;
  std::optional<mode_t> umask;
  std::vector<std::string> environment;
};
// std::nullopt when the lines and the descriptors attached do not match. Takes `fds`.
std::optional<ForkRequest> parse_fork_request(const std::string& request,
                                              std::vector<UniqueFd>& fds);
// In the forked worker: its descriptors, directory, umask and environment, and its arguments
// (`args` less the template's two, then the worker's, naming `parent`).
pool::ForkedWorker become_worker(ForkRequest& fork, int control,
                                 const std::vector<std::string>& args, pid_t parent);
// fork() whose child is this process's parent's child.
pid_t clone_as_sibling();

}  // namespace kiln::internal
