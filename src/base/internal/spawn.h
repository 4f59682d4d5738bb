// Starting and owning one child process: the only code in kiln that calls posix_spawn.
//
// kiln::run() and the process pool build on this. A Child is reaped exactly once, by pid; if it
// is destroyed while still running, its whole process group is killed and it is reaped, so an
// exception between spawn and wait cannot leave a zombie or a stray process. A Child belongs to
// the process that spawned it: in a process forked from that one (which holds a copy of the
// object but is not the child's parent), it never signals, waits for or reaps the child, and its
// destructor only forgets it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "internal/fd.h"

namespace kiln::internal {

using Clock = std::chrono::steady_clock;

struct SpawnSpec {
  // Full path of the program (see resolve_executable) and the arguments it receives.
  std::filesystem::path executable;
  std::vector<std::string> argv;
  // Empty: the parent's working directory.
  std::filesystem::path cwd;
  // The child's whole environment, "NAME=value" each.
  std::vector<std::string> environment;
  // {parent fd, child fd}: each parent descriptor is duplicated onto that number in the child.
  // Child fd 0 defaults to /dev/null when not mapped. Every descriptor above the highest mapped
  // one (and above 2) is closed in the child, close-on-exec or not.
  std::vector<std::pair<int, int>> fds;
  // Put the child in a new process group of its own (pgid == pid).
  bool new_process_group = true;
};

class Child {
 public:
  // Starts the child. Throws ToolNotFound / ToolNotExecutable when exec fails for that reason,
  // SystemError otherwise.
  static Child spawn(const SpawnSpec& spec);
  // Takes on `pid`, a child of this process that was not spawned here (a pool worker that a
  // template forked with CLONE_PARENT), and puts it in a process group of its own, as spawn()
  // does (the child does the same: whichever runs first).
  static Child adopt(pid_t pid);
  // Takes on `pid`, a process another one forked for this one (a pool worker from a template
  // service, template_service.cc) and holds as a zombie until this side reaps it. `status` is
  // its socket from that parent: one message, "exit <wait status>", once the process has exited;
  // closing it lets the parent reap the process. Its end without a message means the parent
  // died, which killed the process (PR_SET_PDEATHSIG): it reads as killed by SIGKILL.
  static Child foreign(pid_t pid, UniqueFd status);

  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // Kills the process group and reaps the child if that has not happened yet.
  ~Child();

  pid_t pid() const noexcept { return pid_; }
  // A descriptor that polls readable once the child has exited; invalid where the kernel has no
  // pidfd_open (then wait_until() falls back to short sleeps).
  int exit_fd() const noexcept { return foreign_ ? status_.get() : pidfd_.get(); }
  bool reaped() const noexcept { return reaped_; }
  // The wait status from waitpid; meaningful once reaped().
  int wait_status() const noexcept { return wait_status_; }
  // When the child was reaped.
  Clock::time_point reaped_at() const noexcept { return reaped_at_; }

  // True once the child has exited; does not reap it (so its group id stays reserved).
  bool has_exited();
  // Waits until the child has exited, or the deadline passes (std::nullopt: no deadline),
  // without reaping it. Returns has_exited().
  bool wait_exit_until(std::optional<Clock::time_point> deadline);
  // Waits for the child to exit (if it has not) and reaps it.
  void reap();
  // wait_exit_until(deadline), then reap() when it exited. Returns reaped().
  bool wait_until(std::optional<Clock::time_point> deadline);
  // Sends `signal` to the child's process group (or to the child alone when it has none of its
  // own). Does nothing once the child is reaped: its pid may belong to someone else by then.
  void signal_group(int signal) noexcept;
  // SIGTERM to the group, up to `grace` for the child to exit, then SIGKILL to the group (which
  // also reaches descendants that ignored SIGTERM), then reaps the child.
  void terminate_group(std::chrono::milliseconds grace) noexcept;
  // False in a process forked from the one that spawned the child: there the child is not ours.
  bool ours() const noexcept;

 private:
  Child(pid_t pid, bool own_group) noexcept;
  // Drops the child without signalling or reaping it (it is another process's).
  void forget() noexcept;
  // A foreign child's wait status, once its parent has sent it (closes status_).
  int read_foreign_status();

  pid_t pid_ = -1;
  pid_t parent_ = -1;  // the process that spawned it
  bool own_group_ = true;
  bool foreign_ = false;  // status_ says when it exited (foreign())
  bool reaped_ = false;
  int wait_status_ = 0;
  Clock::time_point reaped_at_{};
  UniqueFd pidfd_;
  UniqueFd status_;
};

// Tells the child guard (kiln::guard_children, through the pipe `fd`) of every process group
// Child starts and reaps from now on.
void set_guard_fd(int fd) noexcept;

// Finds the program `name` would run, as an absolute path: a name with a '/' is taken as it is
// (relative to `cwd` when given, as exec after chdir would), anything else is searched in
// `path_variable` like execvp does (relative entries, too, against `cwd`). Throws
// ToolNotFound when nothing is there and ToolNotExecutable for a directory or a file without
// execute permission; both messages name the program and where it was looked for.
std::filesystem::path resolve_executable(const std::string& name, const std::string& path_variable,
                                         const std::filesystem::path& cwd);

// The environment a child gets: the parent's (unless `replace`) with `overlay` applied, where
// std::nullopt removes a variable. Sorted by name.
std::vector<std::string> make_environment(
    const std::map<std::string, std::optional<std::string>>& overlay, bool replace);

// The value of PATH in such an environment, or the system default when it has none.
std::string path_of(const std::vector<std::string>& environment);

}  // namespace kiln::internal
