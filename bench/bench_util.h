// Shared by the benchmarks: medians, timing, and the bare posix_spawn + waitpid baseline.
#pragma once

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace kiln::bench {

using Clock = std::chrono::steady_clock;

inline double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  size_t n = samples.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

inline double micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// CPU seconds (user + system) this process and its waited-for children have used so far.
inline double cpu_seconds_with_children() {
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage usage{};
    ::getrusage(who, &usage);
    total += static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
             static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  }
  return total;
}

// Microseconds `fn` takes, once.
template <typename Fn>
double time_us(Fn&& fn) {
  auto start = Clock::now();
  fn();
  return micros(Clock::now() - start);
}

// The floor kiln's runner is measured against: posix_spawn the program and wait for it, with
// no pipes, no timeout and no lookup. Returns whether it exited 0.
inline bool bare_spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0].c_str(), nullptr, nullptr, argv.data(), environ) != 0) return false;
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace kiln::bench
