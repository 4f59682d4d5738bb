// kiln doctor --dist, run as a user would, against real engines: an sccache-dist cluster in network
// namespaces (all PASS, then a wrong client token), schedulers that are down or never answer on
// loopback, no client config at all, a real distccd on loopback, and no iceccd.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "cluster_support.h"
#include "internal/fd.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/distcc_daemon.h"
#include "testing/icecream_cluster.h"
#include "testing/sccache_cluster.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::kiln_cli;
using Findings = std::map<std::string, nlohmann::json>;

Findings by_check(const RunResult& r) {
  Findings findings;
  nlohmann::json list = nlohmann::json::parse(r.output, nullptr, false);
  EXPECT_TRUE(list.is_array()) << r.output << r.error_output;
  if (!list.is_array()) return findings;
  for (const auto& f : list) findings[f["check"].get<std::string>()] = f;
  return findings;
}

std::string text_of(const nlohmann::json& finding, const char* field = "finding") {
  return finding.is_object() ? finding[field].get<std::string>() : "(no such finding)";
}

// A loopback TCP listener that accepts nothing: connections queue and are never answered.
struct SilentListener {
  internal::UniqueFd fd{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  int port = -1;
  SilentListener() {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::listen(fd.get(), 16) == 0 &&
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
  }
};

// A loopback port nothing listens on (bound, read, released).
int dead_port() {
  SilentListener taken;
  return taken.port;
}

// A client config for `url` with `token`, in `dir`.
fs::path client_config(const TempDirectory& dir, const std::string& url, const std::string& token) {
  fs::path conf = dir / "client.conf";
  std::ofstream(conf) << "[dist]\nscheduler_url = \"" << url
                      << "\"\ntoolchains = []\ncache_dir = \"" << (dir / "toolchains").string()
                      << "\"\n[dist.auth]\ntype = \"token\"\ntoken = \"" << token << "\"\n";
  return conf;
}

bool have_sccache() { return fs::exists(KILN_SCCACHE_BIN_DIR "/sccache"); }

std::map<std::string, std::optional<std::string>> sccache_env(const fs::path& conf) {
  const char* path = std::getenv("PATH");
  return {{"PATH", std::string(KILN_SCCACHE_BIN_DIR) + ":" + (path ? path : "/usr/bin:/bin")},
          {"SCCACHE_CONF", conf.string()}};
}

// One cluster for the tests that need one: scheduler, one build server and the client host.
class DoctorDistCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (int attempt = 0; attempt < 2; ++attempt) {
      cluster_.reset();
      net_.reset();
      net_ = std::make_unique<testing::NamespaceNetwork>(3);
      cluster_ = std::make_unique<testing::SccacheCluster>(*net_, testing::SccacheClusterOptions{});
      // Once more when it did not come up: the cluster's own probe client, started beside the
      // scheduler, can catch it before it listens and then stay "not connected".
      if (cluster_->available() || cluster_->missing_prerequisite()) break;
    }
  }
  static void TearDownTestSuite() {
    cluster_.reset();  // every process stopped by pid before the namespaces go
    net_.reset();
  }
  void SetUp() override { KILN_REQUIRE_CLUSTER(*cluster_); }
  // `kiln doctor --dist --json` on the client host, with the cluster's client environment.
  static RunResult doctor(const std::map<std::string, std::optional<std::string>>& env = {}) {
    std::vector<std::string> argv = cluster_->client_prefix();
    argv.insert(argv.end(), {KILN_BINARY, "doctor", "--dist", "--json"});
    auto full = cluster_->client_env();
    for (const auto& [name, value] : env) full[name] = value;
    return run({.argv = argv, .env = full, .merge_stderr = false, .timeout = 180s});
  }
  static std::unique_ptr<testing::NamespaceNetwork> net_;
  static std::unique_ptr<testing::SccacheCluster> cluster_;
};
std::unique_ptr<testing::NamespaceNetwork> DoctorDistCluster::net_;
std::unique_ptr<testing::SccacheCluster> DoctorDistCluster::cluster_;

TEST_F(DoctorDistCluster, EveryCheckPassesAndTheProbeRanOnTheBuildServer) {
  RunResult r = doctor();
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  Findings findings = by_check(r);
  for (const char* check : {"sccache", "sccache config", "sccache scheduler", "sccache servers",
                            "sccache auth", "sccache remote compile"}) {
    EXPECT_EQ(findings[check]["status"], "PASS") << check << ": " << findings[check].dump();
  }
  EXPECT_NE(text_of(findings["sccache servers"]).find("1 build server"), std::string::npos);
  std::string server = cluster_->server_address(0);
  EXPECT_NE(text_of(findings["sccache remote compile"]).find(server), std::string::npos);
  // The scheduler's own log agrees that a job ran there.
  EXPECT_GE(cluster_->completed_jobs(1)[server], 1) << cluster_->logs();
}

TEST_F(DoctorDistCluster, AWrongClientTokenIsAnAuthFailure) {
  TempDirectory dir;
  fs::path conf = client_config(dir, cluster_->scheduler_url(), "not-the-scheduler-token");
  RunResult r = doctor({{"SCCACHE_CONF", conf.string()}});
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  Findings findings = by_check(r);
  EXPECT_EQ(findings["sccache scheduler"]["status"], "PASS") << r.output;
  EXPECT_EQ(findings["sccache auth"]["status"], "FAIL") << r.output;
  EXPECT_NE(text_of(findings["sccache auth"]).find("client token rejected by the scheduler"),
            std::string::npos);
  EXPECT_NE(text_of(findings["sccache auth"], "fix").find("[dist.auth] token"), std::string::npos);
  EXPECT_EQ(findings["sccache remote compile"]["status"], "FAIL") << r.output;
}

TEST(DoctorDistCli, ASchedulerThatIsDownIsUnreachable) {
  if (!have_sccache()) GTEST_SKIP() << "no sccache in " KILN_SCCACHE_BIN_DIR;
  TempDirectory dir;
  std::string url = "http://127.0.0.1:" + std::to_string(dead_port());
  RunResult r = kiln_cli({"doctor", "--dist", "--json", "--timeout", "10"},
                         sccache_env(client_config(dir, url, "token")));
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  Findings findings = by_check(r);
  EXPECT_EQ(findings["sccache config"]["status"], "PASS") << r.output;
  EXPECT_EQ(findings["sccache scheduler"]["status"], "FAIL") << r.output;
  EXPECT_NE(text_of(findings["sccache scheduler"]).find("unreachable"), std::string::npos);
  EXPECT_NE(text_of(findings["sccache scheduler"]).find(url), std::string::npos);
}

TEST(DoctorDistCli, ASchedulerThatNeverAnswersTimesOutAndSaysSo) {
  if (!have_sccache()) GTEST_SKIP() << "no sccache in " KILN_SCCACHE_BIN_DIR;
  SilentListener silent;
  ASSERT_GT(silent.port, 0);
  TempDirectory dir;
  std::string url = "http://127.0.0.1:" + std::to_string(silent.port);
  RunResult r = kiln_cli({"doctor", "--dist", "--json", "--timeout", "2"},
                         sccache_env(client_config(dir, url, "token")));
  EXPECT_FALSE(r.timed_out) << "the doctor hung";
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  Findings findings = by_check(r);
  EXPECT_EQ(findings["sccache scheduler"]["status"], "FAIL") << r.output;
  EXPECT_NE(text_of(findings["sccache scheduler"]).find("timed out"), std::string::npos);
  EXPECT_NE(text_of(findings["sccache scheduler"]).find("within 2 s"), std::string::npos);
}

TEST(DoctorDistCli, NoClientConfigSaysWhereToWriteOne) {
  if (!have_sccache()) GTEST_SKIP() << "no sccache in " KILN_SCCACHE_BIN_DIR;
  TempDirectory home;
  auto env = sccache_env({});
  env["SCCACHE_CONF"] = std::nullopt;
  env["XDG_CONFIG_HOME"] = std::nullopt;
  env["HOME"] = home.path().string();
  RunResult r = kiln_cli({"doctor", "--dist", "--launcher", "sccache"}, env);
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  EXPECT_NE(r.output.find("no sccache client config"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find((home / ".config/sccache/config").string()), std::string::npos);
  EXPECT_NE(r.output.find("fix: write it with [dist] scheduler_url"), std::string::npos);
  EXPECT_EQ(r.output.find("sccache scheduler"), std::string::npos) << "nothing to ask";
}

TEST(DoctorDistCli, DistccOnLoopbackRunsTheProbeRemotely) {
  testing::DistccDaemon daemon;
  if (!daemon.available()) GTEST_SKIP() << daemon.why();
  RunResult r =
      kiln_cli({"doctor", "--dist", "--launcher", "distcc", "--json"}, daemon.client_env());
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
  Findings findings = by_check(r);
  std::string host = "127.0.0.1:" + std::to_string(daemon.port());
  EXPECT_EQ(findings["distcc hosts"]["status"], "PASS") << r.output;
  EXPECT_EQ(findings["distcc remote compile"]["status"], "PASS") << r.output;
  EXPECT_NE(text_of(findings["distcc remote compile"]).find(host), std::string::npos);
  EXPECT_GE(daemon.wait_for_log("COMPILE_OK"), 1U) << daemon.log();
}

TEST(DoctorDistCli, DistccHostThatRefusesFailsWithDistccsReason) {
  if (!fs::exists("/usr/bin/distcc")) GTEST_SKIP() << "distcc is not installed";
  TempDirectory state;
  RunResult r = kiln_cli({"doctor", "--dist", "--launcher", "distcc", "--json", "--timeout", "10"},
                         {{"DISTCC_HOSTS", "127.0.0.1:" + std::to_string(dead_port())},
                          {"DISTCC_DIR", state.path().string()}});
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  Findings findings = by_check(r);
  EXPECT_EQ(findings["distcc remote compile"]["status"], "FAIL") << r.output;
  EXPECT_NE(text_of(findings["distcc remote compile"]).find("failed to distribute"),
            std::string::npos);
}

TEST(DoctorDistCli, IcecreamClusterRunsTheProbeOnItsServer) {
  testing::NamespaceNetwork net(3);
  testing::IcecreamCluster cluster(net, {.servers = 1});
  KILN_REQUIRE_CLUSTER(cluster);
  std::vector<std::string> argv = cluster.client_prefix();
  argv.insert(argv.end(), {KILN_BINARY, "doctor", "--dist", "--launcher", "icecc", "--json"});
  RunResult r =
      run({.argv = argv, .env = cluster.client_env(), .merge_stderr = false, .timeout = 180s});
  EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output << cluster.logs();
  Findings findings = by_check(r);
  EXPECT_EQ(findings["iceccd"]["status"], "PASS") << r.output;
  EXPECT_EQ(findings["icecc remote compile"]["status"], "PASS") << r.output << cluster.logs();
  std::string server = cluster.server_address(0);
  EXPECT_NE(text_of(findings["icecc remote compile"]).find(server), std::string::npos);
  EXPECT_GE(cluster.completed_jobs(1)[server], 1) << cluster.logs();
}

TEST(DoctorDistCli, NoIceccDaemon) {
  if (!fs::exists("/usr/bin/icecc")) GTEST_SKIP() << "icecc is not installed";
  TempDirectory dir;
  RunResult r = kiln_cli({"doctor", "--dist", "--launcher", "icecc", "--json"},
                         {{"ICECC_TEST_SOCKET", (dir / "iceccd.socket").string()}});
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  Findings findings = by_check(r);
  EXPECT_EQ(findings["icecc"]["status"], "PASS") << r.output;
  EXPECT_EQ(findings["iceccd"]["status"], "FAIL") << r.output;
  EXPECT_NE(text_of(findings["iceccd"], "fix").find("iceccd"), std::string::npos);
}

TEST(DoctorDistCli, DistOptionsNeedDist) {
  EXPECT_EQ(kiln_cli({"doctor", "--launcher", "sccache"}).exit_code, 2);
  EXPECT_EQ(kiln_cli({"doctor", "--dist", "--launcher", "bazel"}).exit_code, 2);
}

}  // namespace
}  // namespace kiln
