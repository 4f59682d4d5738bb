// Compares kiln::run() with a bare posix_spawn + waitpid loop on the same tiny static program,
// interleaved in one run so both see the same machine state, and prints both medians and their
// ratio. Goal (issue 2): kiln / bare <= 1.3.
//
//   build/release/bench/process_bench [iterations]
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/process.h"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace {

using Clock = std::chrono::steady_clock;

double median_us(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  size_t n = samples.size();
  return n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

bool bare_spawn(const char* program) {
  char* argv[] = {const_cast<char*>(program), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, program, nullptr, nullptr, argv, environ) != 0) return false;
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : 500;
  const std::string program = KILN_TINY_PROGRAM;
  // Warm both paths (page cache, dynamic loader of this process).
  for (int i = 0; i < 20; ++i) {
    kiln::run({.argv = {program}, .timeout = std::chrono::seconds(10)});
    bare_spawn(program.c_str());
  }
  std::vector<double> kiln_us, bare_us;
  for (int i = 0; i < iterations; ++i) {
    auto t0 = Clock::now();
    kiln::RunResult r = kiln::run({.argv = {program}, .timeout = std::chrono::seconds(10)});
    auto t1 = Clock::now();
    bool ok = bare_spawn(program.c_str());
    auto t2 = Clock::now();
    if (!r.ok() || !ok) {
      (void)std::fprintf(stderr, "process_bench: the tiny program failed\n");
      return 1;
    }
    kiln_us.push_back(micros(t1 - t0));
    bare_us.push_back(micros(t2 - t1));
  }
  double kiln_median = median_us(kiln_us), bare_median = median_us(bare_us);
  double ratio = kiln_median / bare_median;
  std::printf("process_bench: %d runs of %s\n", iterations, program.c_str());
  std::printf("  bare posix_spawn+waitpid  median %8.1f us\n", bare_median);
  std::printf("  kiln::run (timeout set)   median %8.1f us\n", kiln_median);
  std::printf("  ratio kiln/bare = %.3f (goal <= 1.30: %s)\n", ratio,
              ratio <= 1.3 ? "met" : "NOT met");
  return 0;
}
