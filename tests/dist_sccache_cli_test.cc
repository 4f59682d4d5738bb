// kiln build --launcher sccache on a real sccache-dist cluster: the scheduler, the build servers
// and kiln each on a host of their own (network namespaces, src/testing/namespace_network.h),
// every process a child of the test, stopped by pid when it ends.
//
// What sccache 0.16 does with nvcc 13 (checked by hand, and asserted below): it runs nvcc's
// --dryrun, keeps the host-side steps (the host preprocessor, fatbinary) on the client, and sends
// each device step to the cluster: cicc (.ii -> PTX) and ptxas (PTX -> cubin) are one remote
// compile each, so a cubin job is 2 dist compiles, its stats "cache_misses {PTX: 1, CUBIN: 1}"
// (2 hits on a rebuild), and kiln reports it "remote", "sccache: 2 compiles on <server>". The nvcc
// call itself counts as one "non-cacheable compilation". A fatbin for an arch-specific target
// (-arch sm_90a) takes a second cicc pass (compute_90) that reads the first pass's .module_id, and
// sccache 0.16 hashes that file before it exists in about a third of the compiles ("Failed to
// open file for hashing: .../x.module_id", exit 254), with or without a cluster; a fatbin with
// one cicc pass (sm_80, or -gencode arch=compute_90a,code=sm_90a) went through 18 of 18 times.
// kiln keeps a fatbin job for an arch-specific target local (ran "local", the reason in
// ran_detail) and sends the others through sccache.
//
// sccache's scheduler refuses a job ("Insufficient capacity ... Failed to allocate job", and the
// client compiles it locally) past about 2 jobs per CPU of a build server, so -j 8 is used with 4
// build servers of this machine's 2 CPUs each, as a user sets -j to the cluster's size.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_project.h"
#include "cluster_support.h"
#include "kiln/elf.h"
#include "kiln/machine.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "testing/namespace_network.h"
#include "testing/sccache_cluster.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using testing::find_cuobjdump;
using testing::NamespaceNetwork;
using testing::read_file;
using testing::sass_listing;
using testing::SccacheCluster;
using Environment = std::map<std::string, std::optional<std::string>>;

// A manifest of object jobs (and cuda jobs) whose sources are files in the project, so that every
// build compiles the same paths and sccache's hashes (of preprocessed text naming them) repeat.
class DistProject {
 public:
  void add(const std::string& name, const std::string& file, const std::string& text,
           json extra = json::object()) {
    project_.write(file, text);
    extra["name"] = name;
    if (!extra.contains("kind")) extra["kind"] = "object";
    extra["sources"] = {file};
    jobs_.push_back(extra);
  }
  // Without `timeout_s`, a distributed job's limit is kiln's default for one (300 s: the first
  // remote compile waits for the toolchain to be packaged, minutes on a loaded machine).
  void write_manifest(std::optional<int> timeout_s = std::nullopt) {
    json defaults = json::object();
    if (timeout_s) defaults["timeout"] = *timeout_s;
    project_.manifest({{"defaults", defaults}, {"jobs", jobs_}});
  }

  // kiln build into `out` (its report `out`.json), run with `prefix` (a namespace's exec prefix,
  // or none) and `env`.
  RunResult build(const std::string& out, std::vector<std::string> args, Environment env,
                  std::vector<std::string> prefix = {}, std::chrono::seconds timeout = 900s) const {
    return project_.build_with({.args = std::move(args),
                                .env = std::move(env),
                                .out = out,
                                .report = out + ".json",
                                .prefix = std::move(prefix),
                                .timeout = timeout});
  }
  json result(const std::string& out) const { return project_.result(out + ".json"); }
  fs::path path(const std::string& name) const { return project_.path(name); }
  size_t jobs() const { return jobs_.size(); }

 private:
  testing::BuildProject project_;
  json jobs_ = json::array();
};

// 22 C and 22 C++ object jobs, each a distinct function; with `cuda`, 2 cubin jobs for sm_90a,
// a fatbin job for sm_80 (through sccache) and one for sm_90a (kept local), built by nvcc.
void add_mixed_jobs(DistProject& project, bool cuda) {
  for (int i = 0; i < 22; ++i) {
    project.add(fmt::format("c{}", i), fmt::format("c{}.c", i),
                fmt::format("int c_fn_{0}(int x) {{ return x * {1} + {2}; }}\n", i, i + 3, 7 * i));
    project.add(fmt::format("cxx{}", i), fmt::format("cxx{}.cc", i),
                fmt::format("template <int N> struct Scale {{\n"
                            "  static int apply(int x) {{ return x * N; }}\n}};\n"
                            "int cxx_fn_{0}(int x) {{ return Scale<{1}>::apply(x) - {0}; }}\n",
                            i, i + 2));
  }
  if (!cuda) return;
  for (int i = 0; i < 4; ++i) {
    bool cubin = i < 2;
    project.add(fmt::format("k{}", i), fmt::format("k{}.cu", i),
                fmt::format("extern \"C\" __global__ void k{0}(float* x) {{\n"
                            "  x[threadIdx.x] = x[threadIdx.x] * {1}.5f + 1.0f;\n}}\n",
                            i, i + 2),
                {{"kind", "cuda"},
                 {"backend", "nvcc"},
                 {"format", cubin ? "cubin" : "fatbin"},
                 {"arch", i == 2 ? "sm_80" : "sm_90a"}});
  }
}

// Every job of `built` has the output of the same job in `reference`: objects byte for byte,
// CUDA binaries by their SASS listing.
void expect_same_outputs(const json& reference, const json& built) {
  std::map<std::string, json> expected = testing::jobs_by_name(reference);
  for (const json& job : built.at("jobs")) {
    std::string name = job.at("name");
    SCOPED_TRACE(name);
    ASSERT_TRUE(job.at("output").is_string()) << job.dump();
    fs::path mine = job.at("output").get<std::string>();
    fs::path theirs = expected.at(name).at("output").get<std::string>();
    if (job.at("kind") == "cuda") {
      std::string listing = sass_listing(mine);
      EXPECT_NE(listing.find("Function : " + name), std::string::npos) << listing;
      EXPECT_EQ(listing, sass_listing(theirs));
    } else {
      EXPECT_EQ(read_elf_machine(mine).value_or(0), 62) << mine;
      EXPECT_TRUE(read_file(mine) == read_file(theirs)) << mine << " differs from " << theirs;
    }
  }
}

// The compiles of a job: 1 for a C/C++ object, 2 for an nvcc job (cicc and ptxas).
int compiles_of(const json& job) { return job.at("kind") == "cuda" ? 2 : 1; }

// "a, b" for {"a", "b"}, as kiln's details list hosts.
std::string joined(const json& hosts) {
  std::string text;
  for (const json& host : hosts) text += (text.empty() ? "" : ", ") + host.get<std::string>();
  return text;
}

// The remote compiles kiln reports: in all (each job's count from its ran_detail, "sccache: 2
// compiles on 10.x.y.2:10501, 10.x.y.3:10501"), and per build server at least (all of a job's on
// its one host; one on each host of a job whose compiles went to several).
struct RemoteCompiles {
  int total = 0;
  std::map<std::string, int> at_least{};
};

RemoteCompiles remote_compiles(const json& result) {
  static const std::regex kCount(R"(^sccache: (\d+)( of \d+)? compiles? on )");
  RemoteCompiles compiles;
  for (const json& job : result.at("jobs")) {
    json hosts = job.value("remote_hosts", json::array());
    if (hosts.empty()) continue;
    std::string detail = job.value("ran_detail", "");
    std::smatch count;
    if (!std::regex_search(detail, count, kCount)) {
      ADD_FAILURE() << "no count of remote compiles: " << job.dump(2);
      continue;
    }
    int n = std::stoi(count[1].str());
    compiles.total += n;
    for (const json& host : hosts) {
      compiles.at_least[host.get<std::string>()] += hosts.size() == 1 ? n : 1;
    }
  }
  return compiles;
}

// What the scheduler saw completed agrees with kiln's account: the same total, and on each
// server at least what kiln's jobs name it for.
void expect_accounts_agree(const RemoteCompiles& reported,
                           const std::map<std::string, int>& completed) {
  int total = 0;
  for (const auto& [server, n] : completed) total += n;
  EXPECT_EQ(reported.total, total);
  for (const auto& [server, n] : reported.at_least) {
    auto seen = completed.find(server);
    EXPECT_LE(n, seen == completed.end() ? 0 : seen->second) << server;
  }
}

// The fatbin job for sm_90a, which kiln keeps local (see the top of this file).
bool kept_local(const json& job) { return job.at("name") == "k3"; }

// The first build through the cluster: every compile of every job ran on one of the build
// servers (an nvcc job's host-side steps are no compiles to sccache); the sm_90a fatbin job
// locally, saying why.
void expect_first_build_remote(const json& result, const std::set<std::string>& servers) {
  for (const json& job : result.at("jobs")) {
    SCOPED_TRACE(job.at("name").get<std::string>());
    ASSERT_EQ(job.at("status"), "done") << job.dump(2);
    if (kept_local(job)) {
      EXPECT_EQ(job.at("ran"), "local") << job.dump(2);
      EXPECT_NE(job.at("ran_detail")
                    .get<std::string>()
                    .find("--fatbin for an arch-specific target (sm_90a)"),
                std::string::npos);
      EXPECT_TRUE(job.at("remote_hosts").empty()) << job.dump(2);
      continue;
    }
    EXPECT_EQ(job.at("engine"), "sccache") << job.dump(2);
    EXPECT_EQ(job.at("ran"), "remote") << job.dump(2);
    int compiles = compiles_of(job);
    json hosts = job.at("remote_hosts");
    EXPECT_TRUE(!hosts.empty() && hosts.size() <= static_cast<size_t>(compiles)) << job.dump(2);
    for (const json& host : hosts) EXPECT_TRUE(servers.contains(host.get<std::string>())) << host;
    EXPECT_EQ(job.at("ran_detail"), fmt::format("sccache: {} compile{} on {}", compiles,
                                                compiles == 1 ? "" : "s", joined(hosts)));
  }
}

// Every job done from a cache, no remote compile: sccache's (each compile a hit) or kiln's (no
// engine asked at all). The sm_90a fatbin job: local again without kiln's cache.
void expect_every_job_from(const json& result, const std::string& cache) {
  for (const json& job : result.at("jobs")) {
    SCOPED_TRACE(job.at("name").get<std::string>());
    EXPECT_EQ(job.at("status"), cache == "kiln-cache" ? "cached" : "done") << job.dump(2);
    EXPECT_TRUE(job.value("remote_hosts", json::array()).empty()) << job.dump(2);
    if (cache == "engine-cache" && kept_local(job)) {
      EXPECT_EQ(job.at("ran"), "local") << job.dump(2);
    } else if (cache == "engine-cache") {
      EXPECT_EQ(job.at("ran"), cache) << job.dump(2);
      int compiles = compiles_of(job);
      EXPECT_EQ(job.at("ran_detail"),
                fmt::format("sccache: {} cache hit{}", compiles, compiles == 1 ? "" : "s"));
    } else {
      EXPECT_EQ(job.at("ran"), cache) << job.dump(2);
      EXPECT_EQ(job.at("engine"), "") << job.dump(2);
    }
  }
}

TEST(DistSccacheCli, EveryCompileRunsRemotelyMatchesALocalBuildAndRebuildsFromTheCaches) {
  NamespaceNetwork net(6);
  SccacheCluster cluster(net, {.servers = 4});
  KILN_REQUIRE_CLUSTER(cluster);
  bool cuda = which("nvcc").has_value() && find_cuobjdump().has_value();
  if (!cuda) std::printf("no nvcc/cuobjdump: the cuda jobs are left out of this build\n");
  DistProject project;
  add_mixed_jobs(project, cuda);
  project.write_manifest();
  std::set<std::string> servers;
  for (int i = 0; i < cluster.servers(); ++i) servers.insert(cluster.server_address(i));

  RunResult local = project.build("local", {"--no-cache", "-j", "2"}, {});
  ASSERT_EQ(local.exit_code, 0) << local.output << local.error_output;
  RunResult remote = project.build("remote", {"--launcher", "sccache", "-j", "8"},
                                   cluster.client_env(), cluster.client_prefix());
  ASSERT_EQ(remote.exit_code, 0) << remote.output << remote.error_output << cluster.logs();
  json first = project.result("remote");
  ASSERT_EQ(first.at("jobs").size(), project.jobs());
  expect_first_build_remote(first, servers);
  // kiln's account, from its sccache servers' stats, against the scheduler's own log.
  size_t fatbins = cuda ? 1 : 0;  // kept local
  std::map<std::string, int> completed =
      cluster.completed_jobs(static_cast<int>(project.jobs() - fatbins));
  expect_accounts_agree(remote_compiles(first), completed);
  EXPECT_EQ(first.at("summary").at("ran").at("remote"), project.jobs() - fatbins)
      << first.at("summary");
  EXPECT_EQ(first.at("summary").at("ran").value("local", 0u), fatbins) << first.at("summary");
  expect_same_outputs(project.result("local"), first);

  // kiln's cache bypassed: sccache's cache serves every compile, nothing goes to the cluster.
  RunResult engine = project.build("remote", {"--launcher", "sccache", "-j", "8", "--no-cache"},
                                   cluster.client_env(), cluster.client_prefix());
  ASSERT_EQ(engine.exit_code, 0) << engine.output << engine.error_output;
  expect_every_job_from(project.result("remote"), "engine-cache");
  expect_same_outputs(project.result("local"), project.result("remote"));
  // And with kiln's cache, kiln answers before sccache is asked; -j auto takes the slots from the
  // scheduler, through the build's own first sccache server.
  RunResult cached = project.build("remote", {"--launcher", "sccache", "-j", "auto"},
                                   cluster.client_env(), cluster.client_prefix());
  ASSERT_EQ(cached.exit_code, 0) << cached.output << cached.error_output;
  expect_every_job_from(project.result("remote"), "kiln-cache");
  std::smatch slots;
  std::regex said(R"(-j auto: sccache-dist at \S+: 4 build servers, (\d+) CPUs)");
  ASSERT_TRUE(std::regex_search(cached.output, slots, said)) << cached.output;
  size_t cpus = std::stoul(slots[1].str());
  EXPECT_GE(cpus, 4u);
  EXPECT_EQ(project.result("remote").at("summary").at("jobs"), std::min(cpus, project.jobs()));
  expect_same_outputs(project.result("local"), project.result("remote"));
  EXPECT_EQ(cluster.completed_jobs(), completed) << "a rebuild compiled remotely again";
}

// 40 C++ jobs that each take about a second to compile (a constexpr loop), so that both build
// servers are busy when one dies.
void add_slow_jobs(DistProject& project) {
  for (int i = 0; i < 40; ++i) {
    project.add(fmt::format("slow{}", i), fmt::format("slow{}.cc", i),
                fmt::format("constexpr unsigned long spin(unsigned long x) {{\n"
                            "  for (unsigned long i = 0; i < 500; ++i)\n"
                            "    for (unsigned long j = 0; j < 1000; ++j) x = x * 31 + (i ^ j);\n"
                            "  return x;\n}}\n"
                            "constexpr unsigned long kValue = spin({0});\n"
                            "unsigned long slow_{0}() {{ return kValue; }}\n",
                            i));
  }
}

// Waits (at most `bound`) until the scheduler saw `count` jobs completed or the build ended.
void wait_for_completed(const SccacheCluster& cluster, std::future<RunResult>& build, int count,
                        std::chrono::seconds bound) {
  auto deadline = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < deadline &&
         build.wait_for(20ms) != std::future_status::ready) {
    int seen = 0;
    for (const auto& [server, n] : cluster.completed_jobs()) seen += n;
    if (seen >= count) return;
  }
}

// Nothing in `out` but the outputs of done jobs: no temporary, no output of a failed job.
void expect_only_finished_outputs(const fs::path& out, const json& result) {
  std::set<std::string> expected;
  for (const json& job : result.at("jobs")) {
    if (job.at("status") == "done") expected.insert(job.at("name").get<std::string>() + ".o");
  }
  std::set<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(out)) {
    std::string name = entry.path().filename().string();
    EXPECT_FALSE(name.starts_with(".kiln-tmp-")) << entry.path();
    found.insert(name);
    if (expected.contains(name)) {
      EXPECT_EQ(read_elf_machine(entry.path()).value_or(0), 62) << "truncated? " << entry.path();
    }
  }
  EXPECT_EQ(found, expected);
}

// A build server SIGKILLed while the build runs. What happens (seen on this machine, every run):
// the jobs it had in hand fail on the client's side with a dist error and sccache compiles them
// locally, and so do the jobs the scheduler still assigns to it until it stops listing it: kiln
// reports them "local", "sccache: 1 compile locally after 1 failed distribution (fell back)"
// (about 10 of the 40; without the kill all 40 ran remotely). The other server goes on
// compiling; no job fails; the build ends in about 30 s on an idle machine, within kiln's limit
// for a distributed job.
TEST(DistSccacheCli, ABuildServerKilledMidBuildFallsBackWithoutPartialOutput) {
  NamespaceNetwork net(4);
  SccacheCluster cluster(net, {.servers = 2});
  KILN_REQUIRE_CLUSTER(cluster);
  DistProject project;
  add_slow_jobs(project);
  project.write_manifest();

  // -j 4: what 2 build servers of 2 CPUs take without refusing a job for capacity.
  std::future<RunResult> build = std::async(std::launch::async, [&] {
    return project.build("out", {"--launcher", "sccache", "-j", "4"}, cluster.client_env(),
                         cluster.client_prefix(), 900s);
  });
  wait_for_completed(cluster, build, 3, 120s);
  bool mid_build = build.wait_for(0s) != std::future_status::ready;
  std::map<std::string, int> before_kill = cluster.completed_jobs();
  cluster.kill_server(0);
  RunResult result = build.get();
  ASSERT_FALSE(result.timed_out) << "kiln ran past its deadline\n" << result.output;
  EXPECT_TRUE(mid_build) << "the build ended before the server was killed";

  json report = project.result("out");
  ASSERT_EQ(report.at("jobs").size(), project.jobs());
  std::map<std::string, int> ran;
  for (const json& job : report.at("jobs")) {
    SCOPED_TRACE(job.dump(2));
    std::string status = job.at("status");
    if (status == "done") {
      ++ran[job.at("ran").get<std::string>()];
      EXPECT_TRUE(job.at("ran") == "remote" || job.at("ran") == "local");
      if (job.at("ran_detail").get<std::string>().find("fell back") != std::string::npos) {
        ++ran["fell back"];
      }
    } else {
      // Clearly: the job's log says what failed.
      EXPECT_EQ(status, "failed");
      EXPECT_FALSE(job.at("log").get<std::string>().empty());
    }
  }
  EXPECT_EQ(result.exit_code, ran["remote"] + ran["local"] == 40 ? 0 : 1) << result.error_output;
  if (mid_build) {
    EXPECT_GE(ran["fell back"], 1) << "no job noticed the dead server";
  }
  expect_only_finished_outputs(project.path("out"), report);
  // The survivor's remote compiles as the scheduler saw them; the dead one's, at most what it
  // completed (one may have completed as its connection broke).
  std::map<std::string, int> completed = cluster.completed_jobs();
  RemoteCompiles reported = remote_compiles(report);
  EXPECT_EQ(reported.at_least[cluster.server_address(1)], completed[cluster.server_address(1)]);
  EXPECT_LE(reported.at_least[cluster.server_address(0)], completed[cluster.server_address(0)]);
  std::printf(
      "server 0 killed after %d completed; kiln: %d remote, %d local (%d after a failed "
      "distribution); scheduler: %d on server 0, %d on server 1\n",
      before_kill[cluster.server_address(0)], ran["remote"], ran["local"], ran["fell back"],
      completed[cluster.server_address(0)], completed[cluster.server_address(1)]);
}

// No cluster configured: -j auto says so and takes the local recommendation; the compiles go
// through sccache all the same, locally, and say so.
TEST(DistSccacheCli, AutoJobsWithoutAClusterTakesTheLocalRecommendationAndSaysWhy) {
  fs::path bin = fs::path(KILN_SCCACHE_BIN_DIR);
  if (!fs::exists(bin / "sccache")) GTEST_SKIP() << "no sccache in " << bin;
  DistProject project;
  for (int i = 0; i < 3; ++i) {
    project.add(fmt::format("c{}", i), fmt::format("c{}.c", i),
                fmt::format("int alone_{0}(int x) {{ return x + {0}; }}\n", i));
  }
  project.write_manifest(60);
  std::ofstream(project.path("client.conf"))
      << "[cache.disk]\ndir = \"" << project.path("sccache").string() << "\"\n";
  const char* path = std::getenv("PATH");
  RunResult r =
      project.build("out", {"--launcher", "sccache", "-j", "auto"},
                    {{"SCCACHE_CONF", project.path("client.conf").string()},
                     {"SCCACHE_DIR", project.path("sccache").string()},
                     {"PATH", bin.string() + ":" + (path != nullptr ? path : "/usr/bin:/bin")}});
  ASSERT_EQ(r.exit_code, 0) << r.output << r.error_output;
  EXPECT_NE(r.output.find("-j auto: sccache-dist: distributed compilation is not configured"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the local recommendation"), std::string::npos) << r.output;
  json result = project.result("out");
  EXPECT_EQ(result.at("summary").at("jobs"), std::min<size_t>(recommended_jobs_here(), 3));
  for (const json& job : result.at("jobs")) {
    EXPECT_EQ(job.at("ran"), "local") << job.dump(2);
    EXPECT_EQ(job.at("ran_detail"), "sccache: 1 compile locally") << job.dump(2);
  }
}

}  // namespace
}  // namespace kiln
