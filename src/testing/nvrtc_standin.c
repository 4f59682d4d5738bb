/* A stand-in for libnvrtc.so (loaded through KILN_NVRTC) that is the real NVRTC in every way:
 * each call goes to the library named by $KILN_REAL_NVRTC. On top, for the tests:
 *  - each nvrtcCompileProgram appends one line to $KILN_NVRTC_CALLS (when set): how many times
 *    kiln ran the compiler;
 *  - a compile that makes a precompiled header (--create-pch=) appends "create-pch" too, one
 *    that uses one (--use-pch=) "use-pch": how many PCH files were made, how many were used;
 *  - each nvrtcCompileProgram appends to $KILN_NVRTC_RECEIVED (when set) what NVRTC received:
 *    "process <the compiling process's first argument>\n" (kiln's server and its pool workers
 *    are told apart by it), "name <program name>\n", "option <option>\n" for each option in
 *    order, then "end\n";
 *  - while the file $KILN_NVRTC_CRASH exists, nvrtcCompileProgram dies of SIGSEGV, as a crashing
 *    compiler would; while $KILN_NVRTC_HANG exists, it sleeps instead of returning (while
 *    $KILN_NVRTC_HANG_PCH exists, only a compile that makes a PCH does); while
 *    $KILN_NVRTC_REMOVE_PCH exists, it removes the PCH file a compile is to use (the file a
 *    /proc/self/fd/N path names) before NVRTC opens it, as `kiln cache clear` or an eviction in
 *    another process may. The files are looked at on each call, so a test can switch a running
 *    compile server between these. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct _nvrtcProgram* nvrtcProgram;

static void* real(const char* symbol) {
  static void* handle;
  if (handle == NULL) {
    const char* path = getenv("KILN_REAL_NVRTC");
    handle = dlopen(path != NULL ? path : "libnvrtc.so", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) abort();
  }
  void* fn = dlsym(handle, symbol);
  if (fn == NULL) abort();
  return fn;
}

static int exists(const char* variable) {
  const char* path = getenv(variable);
  return path != NULL && access(path, F_OK) == 0;
}

#define FORWARD(ret, name, params, args)             \
  ret name params {                                  \
    static ret(*fn) params;                          \
    if (fn == NULL) fn = (ret(*) params)real(#name); \
    return fn args;                                  \
  }

/* The names programs were created with, for $KILN_NVRTC_RECEIVED: the last few are enough
 * (a program is compiled right after it is created). */
#define KNOWN_PROGRAMS 64
static struct {
  nvrtcProgram program;
  char name[4096];
} known[KNOWN_PROGRAMS];
static unsigned next_known;

int nvrtcCreateProgram(nvrtcProgram* p, const char* src, const char* name, int n,
                       const char* const* h, const char* const* i) {
  static int (*fn)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                   const char* const*);
  if (fn == NULL) {
    fn = (int (*)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                  const char* const*))real("nvrtcCreateProgram");
  }
  int result = fn(p, src, name, n, h, i);
  if (result == 0) {
    unsigned slot = __atomic_fetch_add(&next_known, 1, __ATOMIC_RELAXED) % KNOWN_PROGRAMS;
    known[slot].program = *p;
    snprintf(known[slot].name, sizeof known[slot].name, "%s", name != NULL ? name : "");
  }
  return result;
}

static const char* name_of(nvrtcProgram p) {
  for (unsigned i = 0; i < KNOWN_PROGRAMS; ++i) {
    if (known[i].program == p) return known[i].name;
  }
  return "";
}
FORWARD(int, nvrtcDestroyProgram, (nvrtcProgram * p), (p))
FORWARD(int, nvrtcGetProgramLogSize, (nvrtcProgram p, size_t* s), (p, s))
FORWARD(int, nvrtcGetProgramLog, (nvrtcProgram p, char* s), (p, s))
FORWARD(int, nvrtcGetPTXSize, (nvrtcProgram p, size_t* s), (p, s))
FORWARD(int, nvrtcGetPTX, (nvrtcProgram p, char* s), (p, s))
FORWARD(int, nvrtcGetCUBINSize, (nvrtcProgram p, size_t* s), (p, s))
FORWARD(int, nvrtcGetCUBIN, (nvrtcProgram p, char* s), (p, s))
FORWARD(const char*, nvrtcGetErrorString, (int r), (r))
FORWARD(int, nvrtcVersion, (int* major, int* minor), (major, minor))
FORWARD(int, nvrtcGetNumSupportedArchs, (int* n), (n))
FORWARD(int, nvrtcGetSupportedArchs, (int* a), (a))
FORWARD(int, nvrtcSetPCHHeapSize, (size_t s), (s))

static void append(const char* variable, const char* text) {
  const char* file = getenv(variable);
  if (file == NULL) return;
  int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) {
    (void)!write(fd, text, strlen(text));
    close(fd);
  }
}

static void count(const char* line) { append("KILN_NVRTC_CALLS", line); }

/* One record of $KILN_NVRTC_RECEIVED, written at once (one write: parts from several processes
 * do not interleave). */
static void record_received(nvrtcProgram p, int n, const char* const* options) {
  if (getenv("KILN_NVRTC_RECEIVED") == NULL) return;
  size_t size = strlen(name_of(p)) + 16;
  for (int i = 0; i < n; ++i) size += strlen(options[i]) + 8;
  char command[8192] = "";
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t got = read(fd, command, sizeof command - 1);
    close(fd);
    command[got > 0 ? got : 0] = '\0';
  }
  const char* first = command + strlen(command) + 1; /* argv[1], or "" */
  if (first >= command + sizeof command) first = "";
  size += strlen(first) + 16;
  char* text = malloc(size);
  if (text == NULL) return;
  size_t at = (size_t)snprintf(text, size, "process %s\nname %s\n", first, name_of(p));
  for (int i = 0; i < n; ++i)
    at += (size_t)snprintf(text + at, size - at, "option %s\n", options[i]);
  snprintf(text + at, size - at, "end\n");
  append("KILN_NVRTC_RECEIVED", text);
  free(text);
}

/* Removes the file `path` names; through /proc/self/fd/N, the file that descriptor has open. */
static void remove_pch(const char* path) {
  char target[4096];
  if (strncmp(path, "/proc/self/fd/", 14) == 0) {
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) return;
    target[n] = '\0';
    path = target;
  }
  (void)unlink(path);
}

int nvrtcCompileProgram(nvrtcProgram p, int n, const char* const* options) {
  static int (*fn)(nvrtcProgram, int, const char* const*);
  count("compile\n");
  record_received(p, n, options);
  int making_pch = 0;
  for (int i = 0; i < n; ++i) {
    if (strncmp(options[i], "--create-pch=", 13) == 0) {
      count("create-pch\n");
      making_pch = 1;
    }
    if (strncmp(options[i], "--use-pch=", 10) == 0) {
      count("use-pch\n");
      if (exists("KILN_NVRTC_REMOVE_PCH")) remove_pch(options[i] + 10);
    }
  }
  if (exists("KILN_NVRTC_CRASH")) raise(SIGSEGV);
  while (exists("KILN_NVRTC_HANG") || (making_pch && exists("KILN_NVRTC_HANG_PCH"))) sleep(1);
  if (fn == NULL) fn = (int (*)(nvrtcProgram, int, const char* const*))real("nvrtcCompileProgram");
  return fn(p, n, options);
}
