/* A stand-in for libnvrtc.so (loaded through KILN_NVRTC) that is the real NVRTC in every way:
 * each call goes to the library named by $KILN_REAL_NVRTC. On top, for the tests:
 *  - each nvrtcCompileProgram appends one line to $KILN_NVRTC_CALLS (when set): how many times
 *    kiln ran the compiler;
 *  - while the file $KILN_NVRTC_CRASH exists, nvrtcCompileProgram dies of SIGSEGV, as a crashing
 *    compiler would; while $KILN_NVRTC_HANG exists, it sleeps instead of returning. The files
 *    are looked at on each call, so a test can switch a running compile server between the two. */
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

FORWARD(int, nvrtcCreateProgram,
        (nvrtcProgram * p, const char* src, const char* name, int n, const char* const* h,
         const char* const* i),
        (p, src, name, n, h, i))
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

int nvrtcCompileProgram(nvrtcProgram p, int n, const char* const* options) {
  static int (*fn)(nvrtcProgram, int, const char* const*);
  const char* calls = getenv("KILN_NVRTC_CALLS");
  if (calls != NULL) {
    int fd = open(calls, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      (void)!write(fd, "compile\n", 8);
      close(fd);
    }
  }
  if (exists("KILN_NVRTC_CRASH")) raise(SIGSEGV);
  while (exists("KILN_NVRTC_HANG")) sleep(1);
  if (fn == NULL) fn = (int (*)(nvrtcProgram, int, const char* const*))real("nvrtcCompileProgram");
  return fn(p, n, options);
}
