// Compares kiln::tar / kiln::untar (in-process libarchive) with spawning GNU `tar -czf` /
// `tar -xf` through kiln::run on the same 50 files of 1-4 KiB, interleaved in one run so both
// see the same machine state, and prints both medians and their ratios. Goal: kiln at least 3x
// faster for both.
//
//   build/release/bench/tar_bench [repetitions]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/tar.h"
#include "kiln/temp_directory.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kFiles = 50;

double median_us(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  size_t n = samples.size();
  return n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// 50 files of 1-4 KiB of pseudo-random bytes (fixed seed). Returns their names (relative to
// `dir`) and the total size.
std::vector<std::string> make_inputs(const fs::path& dir, size_t* total) {
  std::mt19937 random(42);
  std::uniform_int_distribution<size_t> size(1024, 4096);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::string> names;
  *total = 0;
  for (int i = 0; i < kFiles; ++i) {
    std::string content(size(random), '\0');
    for (char& c : content) c = static_cast<char>(byte(random));
    names.push_back("file" + std::to_string(i) + ".o");
    std::ofstream(dir / names.back(), std::ios::binary) << content;
    *total += content.size();
  }
  return names;
}

void run_ok(const std::vector<std::string>& argv) {
  kiln::check("Tar error:", {.argv = argv, .timeout = std::chrono::seconds(30)});
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

  auto t0 = Clock::now();
  kiln::tar(work / "kiln.tar", paths);
  auto t1 = Clock::now();
  run_ok(tool_create);
  auto t2 = Clock::now();
  kiln::untar(work / "kiln.tar", kiln_out);
  auto t3 = Clock::now();
  run_ok({"tar", "-xf", (work / "kiln.tar").string(), "-C", tool_out.string()});
  auto t4 = Clock::now();
  s.kiln_create.push_back(micros(t1 - t0));
  s.tool_create.push_back(micros(t2 - t1));
  s.kiln_extract.push_back(micros(t3 - t2));
  s.tool_extract.push_back(micros(t4 - t3));
  fs::remove_all(kiln_out);
  fs::remove_all(tool_out);
}

void report(const char* what, const char* tool_label, const char* kiln_label,
            const std::vector<double>& tool, const std::vector<double>& kiln) {
  double tool_median = median_us(tool), kiln_median = median_us(kiln);
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
    for (int i = 0; i < 3; ++i) repetition(work.path(), names, i, warmup);
    for (int i = 0; i < repetitions; ++i) repetition(work.path(), names, i, samples);
    std::printf("tar_bench: %d files, %zu bytes in all, %d interleaved repetitions, in %s\n",
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
