// kiln::guard_children (kiln/process.h): a process that outlives kiln long enough to kill the
// process groups kiln had started and not reaped, however kiln ended (SIGKILL included).
//
// PR_SET_PDEATHSIG cannot do this for tools: posix_spawn has no way to set it in the child, it
// reaches only the direct child (not the compiler proper a driver started), and it fires when the
// spawning *thread* ends. The guard hears of each group over a pipe; when kiln dies the kernel
// closes kiln's end, the guard reads end-of-file and kills what is left.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <set>

#include "internal/spawn.h"
#include "kiln/error.h"
#include "kiln/process.h"

namespace kiln {
namespace {

// The guard's whole life: it owns no descriptor but the pipe (a guard holding kiln's stdout
// would keep `kiln ... | head` or `$(kiln ...)` waiting) and ignores the signals meant for kiln
// (Ctrl-C, a closed terminal reach the whole foreground group): kiln's end closing is its cue.
[[noreturn]] void guard(int pipe_fd) {
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU}) {
    (void)::signal(signal, SIG_IGN);
  }
  (void)::prctl(PR_SET_NAME, "kiln-guard");
  // A group of its own: `kill -KILL -<kiln's group>` (what a job-control shell or timeout(1)
  // sends to a whole job) must leave the guard alive to do its work.
  (void)::setpgid(0, 0);
  int null_fd = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2 && null_fd >= 0; ++fd) ::dup2(null_fd, fd);
  ::dup2(pipe_fd, 3);
  ::close_range(4, ~0U, 0);
  std::set<pid_t> groups;
  std::int32_t record = 0;
  for (;;) {
    ssize_t n = ::read(3, &record, sizeof record);
    if (n == -1 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof record)) break;  // kiln is gone (records are atomic)
    if (record > 0) {
      groups.insert(record);
    } else {
      groups.erase(-record);
    }
  }
  for (pid_t group : groups) ::kill(-group, SIGKILL);
  ::_exit(0);
}

pid_t guard_pid = -1;
int guard_write_fd = -1;

// At a normal exit the guard is told by end-of-file like after a crash, and waited for: an
// orphaned guard would be a zombie wherever pid 1 does not reap.
void stop_guard() {
  internal::set_guard_fd(-1);
  ::close(guard_write_fd);
  int status = 0;
  while (::waitpid(guard_pid, &status, 0) == -1 && errno == EINTR) {
  }
}

}  // namespace

void guard_children() {
  static bool started = false;
  if (started) return;
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SystemError("pipe2 (child guard)", errno);
  pid_t pid = ::fork();
  if (pid == -1) {
    int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw SystemError("fork (child guard)", error);
  }
  if (pid == 0) {
    ::close(fds[1]);
    guard(fds[0]);
  }
  ::close(fds[0]);
  started = true;
  guard_pid = pid;
  guard_write_fd = fds[1];
  internal::set_guard_fd(fds[1]);
  (void)std::atexit(stop_guard);
}

}  // namespace kiln
