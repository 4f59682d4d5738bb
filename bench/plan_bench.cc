// Setting up a large build: a chain of N jobs (each waits for the one before) whose first job
// fails to compile, parsed and run through kiln::build::run_build, for N = 10,000, 50,000 and
// 100,000. Everything after the first job is skipped, so the time is kiln's own: parsing, the
// dependency graph, scheduling and skip propagation. Goal (issue 14): 100,000 jobs in under 2 s,
// and linear growth: the 100k/10k ratio near 10 (it was quadratic: 50,000 jobs took 8.9 s, and
// 100,000 crashed).
//
//   build/release/bench/plan_bench [rounds]   (default: 3; medians printed)
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_util.h"
#include "kiln/build.h"
#include "kiln/manifest.h"
#include "kiln/temp_directory.h"

namespace {

std::string chain_manifest(std::size_t jobs) {
  std::string text = "{\"jobs\": [\n";
  for (std::size_t i = 0; i < jobs; ++i) {
    text += fmt::format(R"({}{{"name": "j{}", "kind": "object", "language": "c", "code": "{}")",
                        i == 0 ? "" : ",\n", i, i == 0 ? "int broken(void) { return }" : "int x;");
    if (i > 0) text += fmt::format(R"(, "deps": ["j{}"])", i - 1);
    text += "}";
  }
  return text + "]}";
}

struct Times {
  double parse_s = 0;
  double build_s = 0;
};

// One parse and one build of a chain of `jobs`; exits 1 when the build did not skip the rest.
Times measure(std::size_t jobs) {
  std::string text = chain_manifest(jobs);
  kiln::TempDirectory out;
  Times times;
  kiln::build::Manifest manifest;
  times.parse_s = kiln::bench::time_us([&] {
                    manifest = kiln::build::parse_manifest_text(text, out.path(), "chain");
                  }) /
                  1e6;
  kiln::build::Report report;
  times.build_s = kiln::bench::time_us([&] {
                    report = kiln::build::run_build(
                        manifest, {.jobs = 2, .out_dir = out.path() / "out", .use_cache = false});
                  }) /
                  1e6;
  if (report.summary.failed != 1 || report.summary.skipped != jobs - 1) {
    (void)std::fprintf(stderr,
                       "plan_bench: %zu jobs: expected 1 failed and %zu skipped, got %zu, %zu\n",
                       jobs, jobs - 1, report.summary.failed, report.summary.skipped);
    std::exit(1);
  }
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  std::map<std::size_t, double> total;
  for (std::size_t jobs : {10'000, 50'000, 100'000}) {
    std::vector<double> parse, build, sum;
    for (int r = 0; r < rounds; ++r) {
      Times t = measure(jobs);
      parse.push_back(t.parse_s);
      build.push_back(t.build_s);
      sum.push_back(t.parse_s + t.build_s);
    }
    total[jobs] = kiln::bench::median(sum);
    std::printf("%7zu jobs: parse %.3f s, build %.3f s, total %.3f s\n", jobs,
                kiln::bench::median(parse), kiln::bench::median(build), total[jobs]);
  }
  double ratio = total[100'000] / total[10'000];
  std::printf("100k/10k: %.1f (linear: about 10)\n", ratio);
  std::printf("100k jobs in %.3f s: %s (goal: under 2 s)\n", total[100'000],
              total[100'000] < 2.0 ? "met" : "MISSED");
  return 0;
}
