// dist_bench: kiln build through a real sccache-dist cluster (a scheduler and two build servers,
// each a host in its own network namespace) against the same build run locally, in one run:
//   - per-job overhead of a remote compile: 20 tiny C files one at a time (-j1), and 4 CUDA
//     kernels (nvcc, cubin) one at a time, local vs --launcher sccache;
//   - a 200-job build: local -j2 vs --launcher sccache -j auto (the scheduler's slots).
// On one 2-core machine the build servers share the client's cores, so the ratio measures what
// distribution costs here, not what a real cluster gains. Every run compiles fresh code (a salt
// in each source) with kiln's cache off and an empty sccache cache, so nothing is served from a
// cache. Needs root (namespaces, the servers' bubblewrap); prints why and exits 0 otherwise.
// `cmake --build --preset release --target dist_bench`.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/files.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/namespace_network.h"
#include "testing/sccache_cluster.h"

namespace {

namespace fs = std::filesystem;
using kiln::testing::SccacheCluster;
using nlohmann::json;

int salt = 0;  // makes every run's sources new to every cache

json c_jobs(int count, bool tiny) {
  json jobs = json::array();
  ++salt;
  for (int i = 0; i < count; ++i) {
    std::string body =
        tiny ? fmt::format("int f{0}(int a) {{ return a * {0} + {1}; }}\n", i, salt)
             : fmt::format(
                   "#include <math.h>\n#include <string.h>\n"
                   "double f{0}(const double* x, int n) {{\n  double s = {1};\n"
                   "  for (int i = 0; i < n; ++i) s += sin(x[i] * {0}) / (1.0 + x[i] * x[i]);\n"
                   "  return s;\n}}\n",
                   i, salt);
    jobs.push_back({{"name", fmt::format("c{}", i)},
                    {"kind", "object"},
                    {"language", "c"},
                    {"code", body},
                    {"options", {"-O2"}}});
  }
  return jobs;
}

json cuda_jobs(int count) {
  json jobs = json::array();
  ++salt;
  for (int i = 0; i < count; ++i) {
    jobs.push_back(
        {{"name", fmt::format("k{}", i)},
         {"kind", "cuda"},
         {"backend", "nvcc"},
         {"format", "cubin"},
         {"arch", "sm_80"},
         {"code", fmt::format("extern \"C\" __global__ void k{0}(float* y, const float* x, int n) "
                              "{{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                              "  if (i < n) y[i] = x[i] * {1}.0f + {0}.0f;\n}}\n",
                              i, salt)}});
  }
  return jobs;
}

struct Run {
  double seconds = 0;
  std::map<std::string, int> ran;  // the summary's "ran"
};

// One kiln build of `jobs` on the client host: kiln's cache off, an empty sccache cache.
Run build(const SccacheCluster& cluster, const fs::path& scratch, const json& jobs,
          const std::vector<std::string>& flags) {
  static int n = 0;
  fs::path dir = scratch / fmt::format("run{}", ++n);
  fs::create_directories(dir / "sccache");
  kiln::internal::write_file(dir / "kiln.json", json{{"jobs", jobs}}.dump());
  std::vector<std::string> argv = cluster.client_prefix();
  argv.insert(argv.end(),
              {KILN_BINARY, "build", (dir / "kiln.json").string(), "--out", (dir / "out").string(),
               "--no-cache", "--json", (dir / "report.json").string()});
  argv.insert(argv.end(), flags.begin(), flags.end());
  SccacheCluster::Environment env = cluster.client_env();
  env["SCCACHE_DIR"] = (dir / "sccache").string();
  auto start = std::chrono::steady_clock::now();
  kiln::RunResult result =
      kiln::run({.argv = argv, .env = env, .timeout = std::chrono::minutes(10)});
  Run run{std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), {}};
  if (!result.ok()) {
    throw std::runtime_error("kiln build failed: " + result.output + "\n" + cluster.logs());
  }
  json report = json::parse(kiln::internal::read_file(dir / "report.json"));
  for (const auto& [where, count] : report["summary"]["ran"].items()) run.ran[where] = count;
  return run;
}

std::string ran_text(const Run& run) {
  std::string text;
  for (const auto& [where, count] : run.ran) text += fmt::format(" {} {}", count, where);
  return text;
}

void compare(const char* what, int jobs, const Run& local, const Run& remote) {
  std::printf(
      "%-34s local %7.3f s (%6.1f ms/job)   remote %7.3f s (%6.1f ms/job)   "
      "remote/local %.2fx   [remote run:%s]\n",
      what, local.seconds, 1000 * local.seconds / jobs, remote.seconds,
      1000 * remote.seconds / jobs, remote.seconds / local.seconds, ran_text(remote).c_str());
}

}  // namespace

int main() {
  kiln::testing::NamespaceNetwork net(4);
  if (!net.available()) {
    std::printf("dist_bench: skipped: %s\n", net.why().c_str());
    return 0;
  }
  SccacheCluster cluster(net, {.servers = 2});
  if (!cluster.available()) {
    std::printf("dist_bench: skipped: %s\n", cluster.why().c_str());
    return cluster.missing_prerequisite() ? 0 : 1;
  }
  kiln::TempDirectory scratch;
  const std::vector<std::string> remote = {"--launcher", "sccache"};
  // A first remote build packages the toolchains and fetches the servers' certificates once.
  build(cluster, scratch.path(), c_jobs(2, true), remote);
  build(cluster, scratch.path(), cuda_jobs(1), remote);

  std::printf("dist_bench: scheduler %s, 2 build servers, all hosts on this %s\n",
              cluster.scheduler_url().c_str(), "2-core machine");
  Run tiny_local = build(cluster, scratch.path(), c_jobs(20, true), {"-j1"});
  Run tiny_remote =
      build(cluster, scratch.path(), c_jobs(20, true), {"-j1", "--launcher", "sccache"});
  compare("tiny C object, one at a time", 20, tiny_local, tiny_remote);
  Run cuda_local = build(cluster, scratch.path(), cuda_jobs(4), {"-j1"});
  Run cuda_remote = build(cluster, scratch.path(), cuda_jobs(4), {"-j1", "--launcher", "sccache"});
  compare("CUDA kernel (nvcc cubin), one at a time", 4, cuda_local, cuda_remote);
  Run many_local = build(cluster, scratch.path(), c_jobs(200, false), {"-j2"});
  Run many_remote =
      build(cluster, scratch.path(), c_jobs(200, false), {"-j", "auto", "--launcher", "sccache"});
  compare("200 C objects: -j2 vs -j auto", 200, many_local, many_remote);
  std::printf("scheduler's completed jobs per server:");
  for (const auto& [server, count] : cluster.completed_jobs()) {
    std::printf(" %s=%d", server.c_str(), count);
  }
  std::printf("\n");
  return 0;
}
