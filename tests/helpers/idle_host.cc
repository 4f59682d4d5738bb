// kiln_test_idle_host STAT_FILE PROGRAM [ARG...]: runs PROGRAM in a mount namespace of its own
// where /proc/stat is STAT_FILE, a snapshot whose CPU counters never move.
//
// The test clusters put each "machine" in a network namespace of one real machine, so every
// iceccd reads the one /proc/stat: when the tests run beside other work (a loaded CI machine),
// each reports its host as fully busy (load 1000) and icecc-scheduler sends it no job, so the
// cluster's compiles wait, or time out, for a load that is not theirs. An iceccd that sees
// counters that stand still reports an idle host, which each simulated server is. Nothing else
// differs from a real iceccd. Needs CAP_SYS_ADMIN, as the namespaces the clusters use do.
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 3) {
    (void)std::fprintf(stderr, "usage: kiln_test_idle_host STAT_FILE PROGRAM [ARG...]\n");
    return 2;
  }
  if (::unshare(CLONE_NEWNS) != 0) {
    (void)std::fprintf(stderr, "kiln_test_idle_host: unshare(CLONE_NEWNS): %s\n",
                       std::strerror(errno));
    return 1;
  }
  // Private first, or the bind mount below would show through to the namespace it came from.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      ::mount(argv[1], "/proc/stat", nullptr, MS_BIND, nullptr) != 0) {
    (void)std::fprintf(stderr, "kiln_test_idle_host: bind %s over /proc/stat: %s\n", argv[1],
                       std::strerror(errno));
    return 1;
  }
  ::execvp(argv[2], argv + 2);
  (void)std::fprintf(stderr, "kiln_test_idle_host: cannot run %s: %s\n", argv[2],
                     std::strerror(errno));
  return 127;
}
