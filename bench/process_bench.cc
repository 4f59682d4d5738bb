// Compares kiln::run() with a bare posix_spawn + waitpid loop on the same tiny static program,
// interleaved in one run so both see the same machine state, and prints both medians and their
// ratio. Goal (issue 2): kiln / bare <= 1.3.
//
//   build/release/bench/process_bench [iterations]
#include <cstdio>
#include <cstdlib>

#include "bench_util.h"
#include "kiln/process.h"

int main(int argc, char** argv) {
  using kiln::bench::bare_spawn;
  using kiln::bench::time_us;
  int iterations = argc > 1 ? std::atoi(argv[1]) : 500;
  const std::string program = KILN_TINY_PROGRAM;
  auto via_kiln = [&] {
    return kiln::run({.argv = {program}, .timeout = std::chrono::seconds(10)}).ok();
  };
  for (int i = 0; i < 20; ++i) {  // warm the page cache and this process's loader
    via_kiln();
    bare_spawn({program});
  }
  std::vector<double> kiln_us, bare_us;
  bool all_ok = true;
  for (int i = 0; i < iterations; ++i) {
    kiln_us.push_back(time_us([&] { all_ok &= via_kiln(); }));
    bare_us.push_back(time_us([&] { all_ok &= bare_spawn({program}); }));
  }
  if (!all_ok) {
    (void)std::fprintf(stderr, "process_bench: the tiny program failed\n");
    return 1;
  }
  double kiln_median = kiln::bench::median(kiln_us), bare_median = kiln::bench::median(bare_us);
  double ratio = kiln_median / bare_median;
  std::printf("process_bench: %d runs of %s\n", iterations, program.c_str());
  std::printf("  bare posix_spawn+waitpid  median %8.1f us\n", bare_median);
  std::printf("  kiln::run (timeout set)   median %8.1f us\n", kiln_median);
  std::printf("  ratio kiln/bare = %.3f (goal <= 1.30: %s)\n", ratio,
              ratio <= 1.3 ? "met" : "NOT met");
  return 0;
}
