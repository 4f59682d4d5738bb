// What a front end tells a person about a CUDA compile (kiln/cuda_messages.h).
#include <algorithm>
#include <array>
#include <regex>

#include <fmt/format.h>

#include "kiln/cuda_messages.h"

namespace kiln::cuda {
namespace {

// The C library's headers and the system's that NVRTC has none of (it has no host headers at
// all: each of these is "cannot open source file" to NVRTC 13).
constexpr std::array<std::string_view, 44> kHostHeaders = {
    "assert.h",   "complex.h",   "ctype.h",   "errno.h",     "fenv.h",   "float.h",  "inttypes.h",
    "iso646.h",   "limits.h",    "locale.h",  "math.h",      "setjmp.h", "signal.h", "stdalign.h",
    "stdarg.h",   "stdatomic.h", "stdbool.h", "stddef.h",    "stdint.h", "stdio.h",  "stdlib.h",
    "string.h",   "tgmath.h",    "threads.h", "time.h",      "uchar.h",  "wchar.h",  "wctype.h",
    "unistd.h",   "pthread.h",   "fcntl.h",   "dirent.h",    "dlfcn.h",  "malloc.h", "memory.h",
    "strings.h",  "alloca.h",    "sched.h",   "semaphore.h", "poll.h",   "getopt.h", "libgen.h",
    "execinfo.h", "omp.h"};

// Whether `name`, a header NVRTC could not open, is the host's: the C++ library's (<vector>,
// <cstdio>: no directory, no extension), the C library's or the system's.
bool is_host_header(std::string_view name) {
  for (std::string_view dir : {"sys/", "bits/", "arpa/", "netinet/", "linux/"}) {
    if (name.starts_with(dir)) return true;
  }
  if (name.find('/') != std::string_view::npos) return false;
  if (name.find('.') == std::string_view::npos) return true;
  return std::find(kHostHeaders.begin(), kHostHeaders.end(), name) != kHostHeaders.end();
}

}  // namespace

std::string setting(Audience audience, std::string_view key, std::string_view value) {
  if (audience == Audience::manifest) return fmt::format("\"{}\": \"{}\"", key, value);
  return fmt::format("--{} {}", key, value);
}

bool shows_host_code(std::string_view nvrtc_log) {
  static const std::regex missing(R"re(cannot open source file "([^"]+)")re");
  std::string log(nvrtc_log);
  for (std::sregex_iterator it(log.begin(), log.end(), missing), end; it != end; ++it) {
    if (is_host_header((*it)[1].str())) return true;
  }
  // The runtime API's host functions (cudaMalloc, cudaMemcpy, cudaStreamCreate, ...).
  static const std::regex runtime(R"re(identifier "cuda[A-Z]\w*" is undefined)re");
  if (std::regex_search(log, runtime)) return true;
  // A launch in what NVRTC takes for device code (every function is, with -default-device).
  for (std::string_view launch : {"device-side kernel launch could not be processed",
                                  "kernel launch from __device__ or __global__ functions"}) {
    if (nvrtc_log.find(launch) != std::string_view::npos) return true;
  }
  return false;
}

std::string host_code_hint(Audience audience) {
  return fmt::format(
      "hint: NVRTC compiles device code only, without the host's C and C++ headers; {} compiles "
      "host code too",
      setting(audience, "backend", "nvcc"));
}

std::string nvrtc_fatbin_refusal(Audience audience) {
  return fmt::format(
      "NVRTC does not support fatbin generation: use {} or {} with NVRTC, or {} for a fatbin",
      setting(audience, "format", "cubin"), setting(audience, "format", "ptx"),
      setting(audience, "backend", "nvcc"));
}

ToolFailed brief_failure(const ToolFailed& failure, Audience audience) {
  ToolFailure brief = failure.failure();
  brief.source.clear();
  if (brief.label == kNvrtcFailed && shows_host_code(brief.output)) {
    if (!brief.output.empty() && !brief.output.ends_with('\n')) brief.output += '\n';
    brief.output += host_code_hint(audience);
  }
  return ToolFailed(std::move(brief));
}

}  // namespace kiln::cuda
