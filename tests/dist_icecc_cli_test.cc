// kiln build --launcher icecc on a real icecream cluster (IcecreamCluster: icecc-scheduler and two
// iceccd servers in network namespaces, the client's own iceccd taking no jobs), run as a user
// would: the kiln binary in the client's namespace. Every C and C++ object job is reported as
// compiled remotely, on a server the cluster has, from icecc's own log; the scheduler's log
// agrees; the objects are byte-identical to a local build of the same manifest. A server killed
// mid-build: the compiles it held are compiled locally by icecc, and kiln reports them as local,
// naming the server and the error, while the rest go to the server left.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cluster_support.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/icecream_cluster.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using testing::IcecreamCluster;
using testing::NamespaceNetwork;
using testing::read_file;

constexpr int kJobs = 24;

// Object jobs, C and C++ in turn, each source its own: `kJobs` compiles for the cluster.
json object_jobs() {
  json jobs = json::array();
  for (int i = 0; i < kJobs; ++i) {
    if (i % 2 == 0) {
      jobs.push_back({{"name", fmt::format("c{}", i)},
                      {"kind", "object"},
                      {"language", "c"},
                      {"code", fmt::format("#include <string.h>\nint c{0}(const char* s) {{ return "
                                           "(int)strlen(s) * {0}; }}\n",
                                           i)}});
    } else {
      jobs.push_back(
          {{"name", fmt::format("cxx{}", i)},
           {"kind", "object"},
           {"language", "c++"},
           {"code", fmt::format("#include <vector>\nint cxx{0}(const std::vector<int>& v) "
                                "{{ int s = {0}; for (int x : v) s += x; return s; }}\n",
                                i)}});
    }
  }
  return jobs;
}

// kiln build of `manifest` into `out`, optionally through `prefix` (another host's namespace).
RunResult kiln_build(const std::vector<std::string>& prefix, const fs::path& manifest,
                     const fs::path& out, const fs::path& report,
                     const std::vector<std::string>& args,
                     const IcecreamCluster::Environment& env) {
  std::vector<std::string> argv = prefix;
  argv.insert(argv.end(), {KILN_BINARY, "build", manifest.string(), "--out", out.string(), "--json",
                           report.string(), "--no-cache"});
  argv.insert(argv.end(), args.begin(), args.end());
  return run({.argv = argv, .env = env, .merge_stderr = false, .timeout = 900s});
}

TEST(DistIceccCli, EveryObjectJobIsCompiledRemotelyAndMatchesALocalBuild) {
  NamespaceNetwork net(4);
  IcecreamCluster cluster(net, {.servers = 2, .slots = 2});
  KILN_REQUIRE_CLUSTER(cluster);
  TempDirectory work;
  std::ofstream(work / "kiln.json")
      << json{{"defaults", {{"cc", "gcc"}, {"options", {"-O2"}}}}, {"jobs", object_jobs()}}.dump(2);
  IcecreamCluster::Environment env = cluster.client_env();
  env["KILN_CACHE_DIR"] = (work / "cache").string();

  RunResult local =
      kiln_build({}, work / "kiln.json", work / "local", work / "local.json", {"-j", "2"}, env);
  ASSERT_EQ(local.exit_code, 0) << local.output << local.error_output;
  RunResult dist = kiln_build(cluster.client_prefix(), work / "kiln.json", work / "dist",
                              work / "dist.json", {"--launcher", "icecc", "-j", "6"}, env);
  ASSERT_EQ(dist.exit_code, 0) << dist.output << dist.error_output << cluster.logs();

  json report = json::parse(read_file(work / "dist.json"));
  std::set<std::string> servers{cluster.server_address(0), cluster.server_address(1)};
  ASSERT_EQ(report["jobs"].size(), static_cast<size_t>(kJobs));
  int remote_hosts = 0;
  for (const json& job : report["jobs"]) {
    SCOPED_TRACE(job.dump());
    EXPECT_EQ(job["status"], "done");
    EXPECT_EQ(job["engine"], "icecc");
    EXPECT_EQ(job["ran"], "remote");
    ASSERT_EQ(job["remote_hosts"].size(), 1u);
    EXPECT_TRUE(servers.contains(job["remote_hosts"][0].get<std::string>()));
    EXPECT_NE(job["ran_detail"].get<std::string>().find("icecc: compiled on"), std::string::npos);
    remote_hosts += static_cast<int>(job["remote_hosts"].size());
    std::string name = fs::path(job["output"].get<std::string>()).filename().string();
    EXPECT_EQ(read_file(work / "dist" / name), read_file(work / "local" / name)) << name;
    EXPECT_FALSE(read_file(work / "local" / name).empty()) << name;
  }
  EXPECT_EQ(report["summary"]["ran"].value("remote", 0), kJobs) << report["summary"].dump();

  // The scheduler's own count: every compile ended on a server, none on the client's host.
  int on_servers = 0;
  for (const auto& [daemon, jobs] : cluster.completed_jobs(kJobs)) {
    EXPECT_TRUE(servers.contains(daemon)) << daemon << " ran " << jobs << " jobs";
    on_servers += jobs;
  }
  EXPECT_EQ(on_servers, kJobs) << cluster.logs();
  EXPECT_EQ(remote_hosts, kJobs);
}

// A source that takes a second or more at -O2, so a server can be killed while it compiles one.
std::string slow_source(const std::string& name) {
  std::string code;
  for (int i = 0; i < 300; ++i) {
    code += fmt::format(
        "int {}_{}(int x) {{ int s = 0; for (int j = 0; j < x; j++) s += j * {} ^ (s >> 3); "
        "return s; }}\n",
        name, i, i);
  }
  return code;
}

// Waits (at most `limit`) until `file` holds `text`.
bool wait_for_text(const fs::path& file, const std::string& text, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (read_file(file).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

TEST(DistIceccCli, AServerKilledMidBuildLeavesItsCompilesLocalAndTheRestRemote) {
  NamespaceNetwork net(4);
  IcecreamCluster cluster(net, {.servers = 2, .slots = 2});
  KILN_REQUIRE_CLUSTER(cluster);
  TempDirectory work;
  json jobs = json::array();
  for (int i = 0; i < 6; ++i) {
    std::string name = "slow" + std::to_string(i);
    jobs.push_back(
        {{"name", name}, {"kind", "object"}, {"language", "c"}, {"code", slow_source(name)}});
  }
  std::ofstream(work / "kiln.json")
      << json{{"defaults", {{"cc", "gcc"}, {"options", {"-O2"}}}}, {"jobs", jobs}}.dump(2);
  IcecreamCluster::Environment env = cluster.client_env();
  env["KILN_CACHE_DIR"] = (work / "cache").string();

  auto dist = std::async(std::launch::async, [&] {
    return kiln_build(cluster.client_prefix(), work / "kiln.json", work / "dist",
                      work / "dist.json", {"--launcher", "icecc", "-j", "4"}, env);
  });
  // server0's iceccd logs each compile as it starts one.
  bool compiling =
      wait_for_text(cluster.directory() / "server0.log", "remote compile for file", 120s);
  cluster.kill_server(0);
  RunResult result = dist.get();
  ASSERT_TRUE(compiling) << "server0 never compiled\n" << cluster.logs();
  ASSERT_EQ(result.exit_code, 0) << result.output << result.error_output << cluster.logs();
  RunResult local =
      kiln_build({}, work / "kiln.json", work / "local", work / "local.json", {"-j", "2"}, env);
  ASSERT_EQ(local.exit_code, 0) << local.output << local.error_output;

  int fell_back = 0;
  json report = json::parse(read_file(work / "dist.json"));
  for (const json& job : report["jobs"]) {
    SCOPED_TRACE(job.dump());
    EXPECT_EQ(job["status"], "done");
    std::string detail = job["ran_detail"].get<std::string>();
    if (job["ran"] == "local") {
      ++fell_back;
      EXPECT_NE(detail.find("after the remote compile on " + cluster.server_address(0) + " failed"),
                std::string::npos);
      EXPECT_TRUE(job["remote_hosts"].empty());
    } else {
      EXPECT_EQ(job["ran"], "remote");
      EXPECT_NE(detail.find("icecc: compiled on"), std::string::npos);
    }
    std::string name = fs::path(job["output"].get<std::string>()).filename().string();
    EXPECT_EQ(read_file(work / "dist" / name), read_file(work / "local" / name)) << name;
  }
  EXPECT_GE(fell_back, 1) << "no compile was on server0 when it was killed\n"
                          << report.dump(2) << cluster.logs();
}

}  // namespace
}  // namespace kiln
