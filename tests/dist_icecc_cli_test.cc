// kiln build --launcher icecc on a real icecream cluster (IcecreamCluster: icecc-scheduler and two
// iceccd servers in network namespaces, the client's own iceccd taking no jobs), run as a user
// would: the kiln binary in the client's namespace. Every C and C++ object job is reported as
// compiled remotely, on a server the cluster has, from icecc's own log; the scheduler's log
// agrees; the objects are byte-identical to a local build of the same manifest.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
    std::string n = std::to_string(i);
    if (i % 2 == 0) {
      jobs.push_back({{"name", "c" + n},
                      {"kind", "object"},
                      {"language", "c"},
                      {"code", "#include <string.h>\nint c" + n +
                                   "(const char* s) { return (int)strlen(s) * " + n + "; }\n"}});
    } else {
      jobs.push_back({{"name", "cxx" + n},
                      {"kind", "object"},
                      {"language", "c++"},
                      {"code", "#include <vector>\nint cxx" + n +
                                   "(const std::vector<int>& v) { int s = " + n +
                                   "; for (int x : v) s += x; return s; }\n"}});
    }
  }
  return jobs;
}

// kiln build of `manifest` into `out`, optionally through `prefix` (another host's namespace).
RunResult kiln_build(const std::vector<std::string>& prefix, const fs::path& manifest,
                     const fs::path& out, const fs::path& report,
                     const std::vector<std::string>& args, IcecreamCluster::Environment env) {
  std::vector<std::string> argv = prefix;
  argv.insert(argv.end(), {KILN_BINARY, "build", manifest.string(), "--out", out.string(), "--json",
                           report.string(), "--no-cache"});
  argv.insert(argv.end(), args.begin(), args.end());
  return run({.argv = argv, .env = env, .merge_stderr = false, .timeout = 600s});
}

TEST(DistIceccCli, EveryObjectJobIsCompiledRemotelyAndMatchesALocalBuild) {
  NamespaceNetwork net(4);
  IcecreamCluster cluster(net, {.servers = 2, .slots = 2});
  if (cluster.missing_prerequisite()) GTEST_SKIP() << cluster.why();
  ASSERT_TRUE(cluster.available()) << cluster.why();
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
  for (const auto& [daemon, jobs] : cluster.completed_jobs()) {
    EXPECT_TRUE(servers.contains(daemon)) << daemon << " ran " << jobs << " jobs";
    on_servers += jobs;
  }
  EXPECT_EQ(on_servers, kJobs) << cluster.logs();
  EXPECT_EQ(remote_hosts, kJobs);
}

}  // namespace
}  // namespace kiln
