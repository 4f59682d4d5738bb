// kiln::cc::create_shared of a tiny C file against calling gcc directly (posix_spawn + waitpid of
// the same command), interleaved in one run. Goal (issue 3): kiln / direct <= 1.02.
//
//   build/release/bench/cc_bench [iterations]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "bench_util.h"
#include "kiln/cc.h"
#include "kiln/paths.h"
#include "kiln/temp_directory.h"

int main(int argc, char** argv) {
  using kiln::bench::time_us;
  int iterations = argc > 1 ? std::atoi(argv[1]) : 40;
  std::optional<std::filesystem::path> gcc = kiln::which("gcc");
  if (!gcc) {
    (void)std::fprintf(stderr, "cc_bench: gcc not found\n");
    return 1;
  }
  kiln::TempDirectory tmp;
  std::ofstream(tmp / "add.c") << "int add(int a, int b) { return a + b; }\n";
  const std::string source = (tmp / "add.c").string(), lib = (tmp / "libadd.so").string();
  auto via_kiln = [&] { kiln::cc::create_shared(lib, {source}, {.cc = gcc->string()}); };
  const std::vector<std::string> direct{gcc->string(), "-shared", "-fPIC", "-o", lib, source};
  bool ok = true;
  for (int i = 0; i < 3; ++i) {
    via_kiln();
    ok &= kiln::bench::bare_spawn(direct);
  }
  // Wall time of each call, and CPU time (kiln's and gcc's together) of all calls of each kind:
  // CPU time is what kiln adds, whatever else the machine is doing.
  std::vector<double> kiln_us, direct_us;
  double kiln_cpu = 0, direct_cpu = 0;
  for (int i = 0; i < iterations; ++i) {
    double before = kiln::bench::cpu_seconds_with_children();
    kiln_us.push_back(time_us(via_kiln));
    double middle = kiln::bench::cpu_seconds_with_children();
    direct_us.push_back(time_us([&] { ok &= kiln::bench::bare_spawn(direct); }));
    kiln_cpu += middle - before;
    direct_cpu += kiln::bench::cpu_seconds_with_children() - middle;
  }
  if (!ok) {
    (void)std::fprintf(stderr, "cc_bench: gcc failed\n");
    return 1;
  }
  double k = kiln::bench::median(kiln_us), d = kiln::bench::median(direct_us);
  std::printf("cc_bench: %d shared libraries from a tiny C file with %s\n", iterations,
              gcc->c_str());
  std::printf("  gcc directly               median %9.1f us\n", d);
  std::printf("  kiln::cc::create_shared    median %9.1f us\n", k);
  std::printf("  ratio kiln/direct = %.4f wall (goal <= 1.02: %s)\n", k / d,
              k / d <= 1.02 ? "met" : "NOT met");
  double k_min = *std::min_element(kiln_us.begin(), kiln_us.end());
  double d_min = *std::min_element(direct_us.begin(), direct_us.end());
  std::printf("  fastest call: gcc directly %.1f us, kiln %.1f us: ratio %.4f\n", d_min, k_min,
              k_min / d_min);
  std::printf("  cpu: gcc directly %.3f s, kiln %.3f s: ratio %.4f (goal <= 1.02: %s)\n",
              direct_cpu, kiln_cpu, kiln_cpu / direct_cpu,
              kiln_cpu / direct_cpu <= 1.02 ? "met" : "NOT met");
  return 0;
}
