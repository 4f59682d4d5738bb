// remote_cache_bench: kiln's shared remote cache (docs/remote-cache.md) on one redis-server on
// loopback, measured side by side in one run (issue 31's acceptance figures):
//   - a 60-job manifest (50 C/C++ jobs that include standard headers, compiled -O2, objects and
//     shared libraries; 10 CUDA jobs through NVRTC and nvcc): a cold build (empty local cache,
//     read-write remote), then from another checkout with a fresh local cache against the warm
//     remote, then once more with that local cache warm. Goals: cold/warm-remote >= 20x; a remote
//     hit costs <= 3 ms more than a local hit per job (median), computed from the wall times and
//     from the jobs' own seconds in --json;
//   - the same 50 C/C++ jobs (as objects) through a generated build.ninja run by `ninja -j2`
//     with sccache 0.16 and with ccache 4.7 on the same Redis, and through kiln -j2: each fills
//     the remote cold, then builds from another checkout with a fresh local cache. Goals:
//     kiln/sccache <= 0.5 and kiln/ccache <= 0.8 of the warm-remote wall time.
// Redis is emptied (FLUSHALL) before each tool. Each warm run's hits are printed as the tool
// counts them, so a figure from a run that missed shows as such.
//
//   cmake --build build/release --target remote_cache_bench
//
// Without redis-server (or a peer, or nvcc for the CUDA jobs) it says what it leaves out; it
// exits 0 then, 1 when a build fails.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "internal/files.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/cache_servers.h"

namespace {

namespace fs = std::filesystem;
using Environment = std::map<std::string, std::optional<std::string>>;
using nlohmann::json;

constexpr int kCJobs = 50;
constexpr int kCudaJobs = 10;
constexpr int kHeaders = 4;
constexpr auto kRunTimeout = std::chrono::minutes(15);

// Empties the Redis server on the loopback `port` (FLUSHALL); throws when it cannot.
void flush_redis(int port) {
  kiln::testing::RespReply reply = kiln::testing::redis_command(port, {"FLUSHALL"});
  if (!reply.error.empty()) {
    throw std::runtime_error(fmt::format("FLUSHALL on Redis on port {}: {}", port, reply.error));
  }
}

// --- The project ---

// Writes `text` to `path`, making its directories.
void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  kiln::internal::write_file(path, text);
}

// C/C++ job i as real code is: a few standard headers, a project header (through -I or a path
// relative to the source, or none), some loops.
std::string c_source(int i, const std::string& include) {
  std::string name = fmt::format("cc{:02}", i);
  if (i % 2 == 0) {
    return fmt::format(
        "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n{0}"
        "double {1}_norm(const double* x, int n) {{\n  double s = H_VALUE;\n"
        "  for (int i = 0; i < n; ++i) s += sqrt(fabs(x[i])) * JOB_TAG / (1.0 + x[i] * x[i]);\n"
        "  return s;\n}}\n"
        "int {1}_format(char* buffer, size_t size, const double* x, int n) {{\n"
        "  int used = 0;\n  for (int i = 0; i < n && (size_t)used < size; ++i)\n"
        "    used += snprintf(buffer + used, size - (size_t)used, \"%g,\", x[i]);\n"
        "  return used;\n}}\n"
        "double* {1}_copy(const double* x, int n) {{\n"
        "  double* y = (double*)malloc(sizeof(double) * (size_t)n);\n"
        "  if (y) memcpy(y, x, sizeof(double) * (size_t)n);\n  return y;\n}}\n",
        include, name);
  }
  return fmt::format(
      "#include <algorithm>\n#include <cmath>\n#include <map>\n#include <string>\n"
      "#include <vector>\n{0}"
      "namespace proj {{\n"
      "std::vector<double> {1}_sorted(std::vector<double> v) {{\n"
      "  std::sort(v.begin(), v.end());\n"
      "  for (double& x : v) x = std::sqrt(std::abs(x)) * JOB_TAG + H_VALUE;\n  return v;\n}}\n"
      "std::string {1}_name(int k) {{ return \"{1}-\" + std::to_string(k * JOB_TAG); }}\n"
      "std::map<std::string, int> {1}_count(const std::vector<std::string>& words) {{\n"
      "  std::map<std::string, int> counts;\n  for (const auto& w : words) ++counts[w];\n"
      "  return counts;\n}}\n}}  // namespace proj\n",
      include, name);
}

// How job i reads its project header: 0 through -I, 1 through a relative path, 2 none.
int include_style(int i) { return i % 3; }

std::string include_line(int i) {
  switch (include_style(i)) {
    case 0:
      return fmt::format("#include <proj/h{}.h>\n", i % kHeaders);
    case 1:
      return fmt::format("#include \"../include/proj/h{}.h\"\n", i % kHeaders);
    default:
      return "#ifndef H_VALUE\n#define H_VALUE 7\n#endif\n";
  }
}

std::string c_file(int i) { return fmt::format("src/cc{:02}.{}", i, i % 2 == 0 ? "c" : "cc"); }

// Writes the sources of one checkout under `root`.
void write_sources(const fs::path& root, bool cuda) {
  for (int n = 0; n < kHeaders; ++n) {
    write_file(root / fmt::format("include/proj/h{}.h", n),
               fmt::format("#pragma once\n#define H_VALUE {}\n", 11 * n + 3));
  }
  for (int i = 0; i < kCJobs; ++i) write_file(root / c_file(i), c_source(i, include_line(i)));
  for (int j = 0; cuda && j < kCudaJobs; ++j) {
    write_file(root / fmt::format("cuda/cu{:02}.cu", j),
               fmt::format("#include <cuda_fp16.h>\n"
                           "extern \"C\" __global__ void cu{0:02}(float* y, const float* x, int n) "
                           "{{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                           "  if (i < n) y[i] = __half2float(__float2half(x[i] * {1}.0f)) + "
                           "sinf(x[i]);\n}}\n",
                           j, j + 2));
  }
}

// The kiln jobs: the C/C++ ones (every tenth a shared library when `shared`), then the CUDA
// ones (seven NVRTC, three nvcc; cubin and ptx in turn).
json kiln_manifest(const fs::path& root, bool shared, bool cuda) {
  json jobs = json::array();
  for (int i = 0; i < kCJobs; ++i) {
    json options = {"-O2", fmt::format("-DJOB_TAG={}", i)};
    if (include_style(i) == 0) options.push_back("-I" + (root / "include").string());
    jobs.push_back({{"name", fmt::format("cc{:02}", i)},
                    {"kind", shared && i % 10 == 9 ? "shared" : "object"},
                    {"sources", {c_file(i)}},
                    {"options", options}});
  }
  for (int j = 0; cuda && j < kCudaJobs; ++j) {
    bool nvrtc = j < 7;
    jobs.push_back({{"name", fmt::format("cu{:02}", j)},
                    {"kind", "cuda"},
                    {"sources", {fmt::format("cuda/cu{:02}.cu", j)}},
                    {"backend", nvrtc ? "nvrtc" : "nvcc"},
                    {"format", (j % 2 == 0) == nvrtc ? "cubin" : "ptx"},
                    {"arch", "sm_80"}});
  }
  return {{"jobs", jobs}};
}

// The same C/C++ jobs as objects for ninja, each compile behind `launcher` (with paths relative
// to the checkout, as a build directory in it would have them).
std::string ninja_file(const std::string& launcher) {
  std::string text = fmt::format(
      "launcher = {}\n"
      "rule cc\n  command = $launcher $compiler -O2 $flags -MD -MF $out.d -c $in -o $out\n"
      "  depfile = $out.d\n  deps = gcc\n",
      launcher);
  for (int i = 0; i < kCJobs; ++i) {
    std::string flags = fmt::format("-DJOB_TAG={}", i);
    if (include_style(i) == 0) flags += " -Iinclude";
    text += fmt::format("build obj/cc{:02}.o: cc {}\n  compiler = {}\n  flags = {}\n", i, c_file(i),
                        i % 2 == 0 ? "gcc" : "g++", flags);
  }
  return text;
}

// --- Running the tools ---

// Nothing of the caller's environment that would change a cache.
Environment clean_environment() {
  Environment env;
  for (const char* name :
       {"KILN_NO_CACHE", "KILN_REMOTE_CACHE", "KILN_REMOTE_CACHE_MODE",
        "KILN_REMOTE_CACHE_CREDENTIALS", "KILN_BASE_DIR", "CPATH", "C_INCLUDE_PATH",
        "CPLUS_INCLUDE_PATH", "CCACHE_DIR", "CCACHE_REMOTE_STORAGE", "CCACHE_PREFIX", "SCCACHE_DIR",
        "SCCACHE_REDIS", "SCCACHE_REDIS_ENDPOINT", "RUSTC_WRAPPER"}) {
    env[name] = std::nullopt;
  }
  return env;
}

kiln::RunResult must_run(std::vector<std::string> argv, const Environment& env,
                         const fs::path& cwd = {}) {
  kiln::RunResult result =
      kiln::run({.argv = std::move(argv), .cwd = cwd, .env = env, .timeout = kRunTimeout});
  if (!result.ok()) {
    throw std::runtime_error(fmt::format("{} failed ({}):\n{}\n{}", result.command_line,
                                         result.status_text(), result.output, result.error_output));
  }
  return result;
}

double seconds(const kiln::RunResult& result) {
  return std::chrono::duration<double>(result.duration).count();
}

struct KilnRun {
  double seconds = 0;
  json report;
  std::map<std::string, int> ran;  // how many jobs ran where

  // A line saying how many of `jobs` did not run `where` (their compiles are in the figures),
  // "" when all did.
  std::string shortfall(const std::string& where, int jobs) const {
    auto it = ran.find(where);
    int missed = jobs - (it == ran.end() ? 0 : it->second);
    if (missed == 0) return "";
    return fmt::format(
        "  NOTE: {} of {} jobs were not served from {}: the figure includes their "
        "compiles\n",
        missed, jobs, where);
  }
  std::string ran_text() const {
    std::string text;
    for (const auto& [where, count] : ran) text += fmt::format(" {} {}", count, where);
    return text;
  }
  // The median of the jobs' own seconds, of those that ran `where`.
  double median_job_seconds(const std::string& where) const {
    std::vector<double> samples;
    for (const json& job : report["jobs"]) {
      if (job["ran"] == where) samples.push_back(job["seconds"].get<double>());
    }
    return kiln::bench::median(samples);
  }
};

// kiln build <checkout>/<manifest> -j2 on the local cache `cache` and the remote `url`.
KilnRun kiln_build(const fs::path& checkout, const std::string& manifest, const fs::path& cache,
                   const std::string& url, bool read_write) {
  static int n = 0;
  fs::path out = checkout.parent_path() / fmt::format("kiln-out{}", ++n);
  fs::path report = checkout.parent_path() / fmt::format("kiln-report{}.json", n);
  Environment env = clean_environment();
  env["KILN_CACHE_DIR"] = cache.string();
  std::vector<std::string> argv = {KILN_BINARY,
                                   "build",
                                   (checkout / manifest).string(),
                                   "--out",
                                   out.string(),
                                   "--json",
                                   report.string(),
                                   "-j",
                                   "2",
                                   "--remote-cache",
                                   url,
                                   "--remote-cache-mode",
                                   read_write ? "read-write" : "read-only"};
  kiln::RunResult result = must_run(argv, env);
  KilnRun run{seconds(result), json::parse(kiln::internal::read_file(report)), {}};
  for (const json& job : run.report["jobs"]) {
    ++run.ran[job["ran"].is_string() ? job["ran"].get<std::string>() : "(none)"];
  }
  const json& remote = run.report["summary"]["remote_cache"];
  if (remote.is_object() && remote.value("errors", 0) > 0) {
    std::printf("  (kiln's remote cache had errors: %s)\n", remote.dump().c_str());
  }
  return run;
}

// A checkout of the project at `root` (its parent holds what builds write).
fs::path checkout(const fs::path& scratch, const std::string& path, bool cuda) {
  fs::path root = scratch / path;
  write_sources(root, cuda);
  write_file(root / "kiln.json", kiln_manifest(root, true, cuda).dump(2));
  write_file(root / "objects.json", kiln_manifest(root, false, false).dump(2));
  write_file(root / "sccache.ninja", ninja_file(KILN_SCCACHE_BIN_DIR "/sccache"));
  write_file(root / "ccache.ninja", ninja_file("ccache"));
  return root;
}

const char* verdict(bool met) { return met ? "MET" : "MISSED"; }

// --- kiln alone: cold, warm remote, warm local ---

void kiln_figures(const fs::path& scratch, const std::string& url, bool cuda) {
  fs::path a = checkout(scratch, "kiln-a/proj", cuda);
  fs::path b = checkout(scratch, "kiln-b/work/proj", cuda);
  int jobs = kCJobs + (cuda ? kCudaJobs : 0);
  KilnRun cold = kiln_build(a, "kiln.json", scratch / "kiln-a/cache", url, true);
  KilnRun warm = kiln_build(b, "kiln.json", scratch / "kiln-b/cache", url, false);
  KilnRun local = kiln_build(b, "kiln.json", scratch / "kiln-b/cache", url, false);
  std::printf("kiln, %d jobs (%d C/C++, %d CUDA), -j2:\n", jobs, kCJobs, cuda ? kCudaJobs : 0);
  std::printf("  cold (empty caches, read-write)              %8.3f s  [%s ]\n", cold.seconds,
              cold.ran_text().c_str());
  std::printf("  warm remote (other checkout, empty local)    %8.3f s  [%s ]\n", warm.seconds,
              warm.ran_text().c_str());
  std::printf("  warm local                                   %8.3f s  [%s ]\n", local.seconds,
              local.ran_text().c_str());
  std::printf("%s", warm.shortfall("remote-cache", jobs).c_str());
  double ratio = cold.seconds / warm.seconds;
  std::printf("  cold / warm remote        %7.1fx   (goal >= 20x: %s)\n", ratio,
              verdict(ratio >= 20));
  double per_job_ms = 1000 * (warm.seconds - local.seconds) / jobs;
  double median_ms =
      1000 * (warm.median_job_seconds("remote-cache") - local.median_job_seconds("kiln-cache"));
  std::printf(
      "  remote hit - local hit, per job: %.2f ms from wall times, %.2f ms from the "
      "jobs' median seconds   (goal <= 3 ms: %s)\n",
      per_job_ms, median_ms, verdict(std::max(per_job_ms, median_ms) <= 3));
}

// --- The peers, and kiln, on the same C/C++ jobs ---

struct PeerRun {
  double cold = 0;
  double warm = 0;
  std::string hits;  // what the tool says it hit, after the warm run
};

// Runs `ninja -f <tool>.ninja -j2` in the checkout (after removing what an earlier run left).
double ninja_build(const fs::path& root, const std::string& tool, const Environment& env) {
  fs::remove_all(root / "obj");
  fs::remove(root / ".ninja_log");
  fs::remove(root / ".ninja_deps");
  return seconds(must_run({"ninja", "-f", tool + ".ninja", "-j2"}, env, root));
}

// The lines of `text` that contain one of `words`, joined with "; ".
std::string lines_with(const std::string& text, const std::vector<std::string>& words) {
  std::string found;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.find('\n', start), text.size());
    std::string line = text.substr(start, end - start);
    for (const std::string& word : words) {
      if (line.find(word) != std::string::npos) {
        found += (found.empty() ? "" : "; ") + line;
        break;
      }
    }
    start = end + 1;
  }
  return found;
}

PeerRun ccache_runs(const fs::path& a, const fs::path& b, const fs::path& scratch,
                    const std::string& url) {
  auto env_for = [&](const fs::path& dir) {
    Environment env = clean_environment();
    fs::create_directories(dir);
    write_file(dir / "ccache.conf", "");
    env["CCACHE_CONFIGPATH"] = (dir / "ccache.conf").string();
    env["CCACHE_DIR"] = dir.string();
    env["CCACHE_REMOTE_STORAGE"] = url;
    return env;
  };
  PeerRun run;
  run.cold = ninja_build(a, "ccache", env_for(scratch / "ccache-a"));
  Environment warm = env_for(scratch / "ccache-b");
  run.warm = ninja_build(b, "ccache", warm);
  run.hits = lines_with(must_run({"ccache", "--print-stats"}, warm).output,
                        {"remote_storage_hit", "remote_storage_miss", "local_storage_hit",
                         "local_storage_miss", "remote_storage_error"});
  return run;
}

PeerRun sccache_runs(const fs::path& a, const fs::path& b, const fs::path& scratch,
                     const std::string& url) {
  const std::string sccache = KILN_SCCACHE_BIN_DIR "/sccache";
  auto env_for = [&](const fs::path& dir) {
    Environment env = clean_environment();
    fs::create_directories(dir);
    write_file(dir / "sccache.toml", "");
    env["SCCACHE_CONF"] = (dir / "sccache.toml").string();
    env["SCCACHE_DIR"] = dir.string();
    env["SCCACHE_REDIS_ENDPOINT"] = url;
    env["SCCACHE_SERVER_PORT"] = std::to_string(kiln::testing::unused_loopback_port());
    env["SCCACHE_IDLE_TIMEOUT"] = "300";  // should the bench die before stopping it
    return env;
  };
  // Each run with a server of its own, started before and stopped after.
  auto timed = [&](const fs::path& root, const Environment& env, std::string* stats) {
    must_run({sccache, "--start-server"}, env);
    double wall = 0;
    try {
      wall = ninja_build(root, "sccache", env);
      if (stats != nullptr) *stats = must_run({sccache, "--show-stats"}, env).output;
    } catch (...) {
      (void)kiln::run({.argv = {sccache, "--stop-server"}, .env = env});
      throw;
    }
    must_run({sccache, "--stop-server"}, env);
    return wall;
  };
  PeerRun run;
  run.cold = timed(a, env_for(scratch / "sccache-a"), nullptr);
  std::string stats;
  run.warm = timed(b, env_for(scratch / "sccache-b"), &stats);
  run.hits = lines_with(stats, {"Cache hits", "Cache misses", "Cache errors"});
  return run;
}

PeerRun kiln_runs(const fs::path& a, const fs::path& b, const fs::path& scratch,
                  const std::string& url) {
  PeerRun run;
  run.cold = kiln_build(a, "objects.json", scratch / "kiln-objects-a", url, true).seconds;
  KilnRun warm = kiln_build(b, "objects.json", scratch / "kiln-objects-b", url, false);
  run.warm = warm.seconds;
  run.hits = "ran:" + warm.ran_text() +
             fmt::format("; remote_cache {}", warm.report["summary"]["remote_cache"].dump());
  std::printf("%s", warm.shortfall("remote-cache", kCJobs).c_str());
  return run;
}

// Why a peer cannot be measured here (it, or ninja, is missing); std::nullopt when it can.
std::optional<std::string> missing_peer(const std::string& program) {
  if (!kiln::which("ninja")) return "ninja is not installed";
  if (program.find('/') != std::string::npos ? !fs::exists(program) : !kiln::which(program)) {
    return program + " is not installed (scripts/install-deps.sh installs the peers)";
  }
  return std::nullopt;
}

void peer_figures(const fs::path& scratch, int port, const std::string& url) {
  fs::path a = checkout(scratch, "peers-a/proj", false);
  fs::path b = checkout(scratch, "peers-b/work/proj", false);
  std::printf(
      "\n%d C/C++ objects, -j2, cold fill then warm remote with an empty local cache "
      "(another checkout):\n",
      kCJobs);
  std::map<std::string, std::optional<PeerRun>> runs;
  auto measure = [&](const std::string& name, auto&& fn, const std::optional<std::string>& why) {
    if (why) {
      std::printf("  %-8s skipped: %s\n", name.c_str(), why->c_str());
      return;
    }
    flush_redis(port);
    PeerRun run = fn(a, b, scratch, url);
    std::printf("  %-8s cold %8.3f s   warm remote %8.3f s   [%s]\n", name.c_str(), run.cold,
                run.warm, run.hits.c_str());
    runs[name] = run;
  };
  measure("sccache", sccache_runs, missing_peer(KILN_SCCACHE_BIN_DIR "/sccache"));
  measure("ccache", ccache_runs, missing_peer("ccache"));
  measure("kiln", kiln_runs, std::nullopt);
  const PeerRun& kiln = *runs["kiln"];
  if (runs["sccache"]) {
    double ratio = kiln.warm / runs["sccache"]->warm;
    std::printf("  kiln / sccache  %.2f   (goal <= 0.5: %s)\n", ratio, verdict(ratio <= 0.5));
  }
  if (runs["ccache"]) {
    double ratio = kiln.warm / runs["ccache"]->warm;
    std::printf("  kiln / ccache   %.2f   (goal <= 0.8: %s)\n", ratio, verdict(ratio <= 0.8));
  }
}

}  // namespace

int main() {
  if (std::optional<std::string> why = kiln::testing::RedisServer::missing()) {
    std::printf("remote_cache_bench: skipped: %s\n", why->c_str());
    return 0;
  }
  kiln::testing::RedisServer redis;
  if (!redis.running()) {
    std::printf("remote_cache_bench: skipped: %s\n", redis.why().c_str());
    return 0;
  }
  bool cuda = kiln::which("nvcc").has_value() || fs::exists("/usr/local/cuda/bin/nvcc");
  std::printf("remote_cache_bench: redis-server at %s on this %ld-core machine%s\n",
              redis.url().c_str(), ::sysconf(_SC_NPROCESSORS_ONLN),
              cuda ? "" : " (no nvcc: the CUDA jobs are left out)");
  kiln::TempDirectory scratch;
  try {
    flush_redis(redis.port());
    kiln_figures(scratch.path(), redis.url(), cuda);
    peer_figures(scratch.path(), redis.port(), redis.url());
  } catch (const std::exception& e) {
    (void)std::fprintf(stderr, "remote_cache_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
