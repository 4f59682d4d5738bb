// Compares kiln::tar / kiln::untar (in-process libarchive) with spawning GNU `tar -czf` /
// `tar -xf` through kiln::run on the same 50 files of 1-4 KiB, interleaved in one run so both
// see the same machine state, and prints both medians and their ratios. Goal (issue 3): kiln at
// least 3x faster for both.
//
// The files are what kiln bundles in practice: object files, compiled here by gcc from generated
// C of varying length. Every repetition extracts into fresh directories, all removed only at the
// end: removing them between repetitions makes ext4 scan recently freed inodes on every file
// creation, a cost both sides would pay that is not theirs. For the same reason a run started
// right after another (whose cleanup just freed thousands of inodes) measures mostly the disk:
// on this project's VMs extraction then costs 60-120 us per file for tar and kiln alike, and the
// extract ratio falls to ~1.5x. `TMPDIR=/dev/shm build/release/bench/tar_bench` measures the
// tools alone.
//
//   build/release/bench/tar_bench [repetitions]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "kiln/cc.h"
#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/tar.h"
#include "kiln/temp_directory.h"

namespace {

namespace fs = std::filesystem;
using kiln::bench::time_us;

constexpr int kFiles = 50;

// 50 object files of 1-4 KiB from generated C (fixed seed). Returns their names (relative to
// `dir`) and their total size.
std::vector<std::string> make_inputs(const fs::path& dir, size_t* total) {
  std::mt19937 random(42);
  std::uniform_int_distribution<int> statements(2, 60);
  std::vector<std::string> names;
  *total = 0;
  for (int i = 0; i < kFiles; ++i) {
    fs::path source = dir / ("kernel" + std::to_string(i) + ".c");
    std::ofstream out(source);
    out << "int kernel" << i << "(int* x, int n) {\n  int s = 0;\n";
    for (int k = statements(random); k > 0; --k)
      out << "  s += x[" << k << " % n] * " << k * i + 1 << ";\n";
    out << "  return s;\n}\n";
    out.close();
    names.push_back("kernel" + std::to_string(i) + ".o");
    kiln::cc::create_object(dir / names.back(), {source}, {.options = {"-O1"}, .cc = "gcc"});
    fs::remove(source);
    *total += fs::file_size(dir / names.back());
  }
  return names;
}

struct Samples {
  std::vector<double> kiln_create, tool_create, kiln_extract, tool_extract;
};

// One interleaved repetition of all four; `i` keeps every output fresh.
void repetition(const fs::path& work, const std::vector<std::string>& names, int i, Samples& s) {
  std::vector<fs::path> paths;
  for (const std::string& name : names) paths.push_back(work / "in" / name);
  std::vector<std::string> tool_create = {"tar", "-czf", (work / "tool.tar").string(), "-C",
                                          (work / "in").string()};
  tool_create.insert(tool_create.end(), names.begin(), names.end());
  fs::path kiln_out = work / ("kiln-x" + std::to_string(i));
  fs::path tool_out = work / ("tool-x" + std::to_string(i));
  fs::create_directories(kiln_out);
  fs::create_directories(tool_out);
  auto run_ok = [](const std::vector<std::string>& argv) {
    kiln::check("Tar error:", {.argv = argv, .timeout = std::chrono::seconds(30)});
  };
  s.kiln_create.push_back(time_us([&] { kiln::tar(work / "kiln.tar", paths); }));
  s.tool_create.push_back(time_us([&] { run_ok(tool_create); }));
  s.kiln_extract.push_back(time_us([&] { kiln::untar(work / "kiln.tar", kiln_out); }));
  s.tool_extract.push_back(time_us([&] {
    run_ok({"tar", "-xf", (work / "kiln.tar").string(), "-C", tool_out.string()});
  }));
}

void report(const char* what, const char* tool_label, const char* kiln_label,
            const std::vector<double>& tool, const std::vector<double>& kiln) {
  double tool_median = kiln::bench::median(tool), kiln_median = kiln::bench::median(kiln);
  double speedup = tool_median / kiln_median;
  std::printf("  %s\n", what);
  std::printf("    %-28s median %9.1f us\n", tool_label, tool_median);
  std::printf("    %-28s median %9.1f us\n", kiln_label, kiln_median);
  std::printf("    speed-up tar/kiln = %.2fx (goal >= 3: %s)\n", speedup,
              speedup >= 3.0 ? "met" : "NOT met");
}

}  // namespace

int main(int argc, char** argv) {
  int repetitions = argc > 1 ? std::atoi(argv[1]) : 30;
  try {
    kiln::TempDirectory work;
    fs::create_directories(work / "in");
    size_t total = 0;
    std::vector<std::string> names = make_inputs(work / "in", &total);
    Samples warmup, samples;
    for (int i = 0; i < 3; ++i) repetition(work.path(), names, -1 - i, warmup);
    for (int i = 0; i < repetitions; ++i) repetition(work.path(), names, i, samples);
    std::printf("tar_bench: %d object files, %zu bytes in all, %d interleaved repetitions, in %s\n",
                kFiles, total, repetitions, work.path().c_str());
    report("create (gzip)", "tar -czf (via kiln::run)", "kiln::tar", samples.tool_create,
           samples.kiln_create);
    report("extract", "tar -xf (via kiln::run)", "kiln::untar", samples.tool_extract,
           samples.kiln_extract);
  } catch (const kiln::Error& e) {
    (void)std::fprintf(stderr, "tar_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
