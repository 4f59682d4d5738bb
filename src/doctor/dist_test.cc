// kiln doctor --dist's readers, fed what sccache 0.16, icecc 1.4 and distcc 3.4 really print.
#include "dist.h"

#include <gtest/gtest.h>

#include <fstream>

#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln::doctor::detail {
namespace {

using testing::ScopedEnv;

TEST(DistReaders, SccacheConfig) {
  SccacheConfig config = parse_sccache_config(R"(
# a client
[dist]
scheduler_url = "http://10.0.0.1:10600"   # the scheduler
toolchains = []
cache_dir = "/tmp/tc"
[dist.auth]
type = 'token'
token = "s3cret"
[cache.disk]
dir = "/tmp/cache"
)");
  EXPECT_EQ(config.scheduler_url, "http://10.0.0.1:10600");
  EXPECT_EQ(config.auth_type, "token");
  EXPECT_TRUE(config.has_token);
  // A scheduler_url outside [dist] is not the one sccache reads.
  SccacheConfig elsewhere = parse_sccache_config("[cache.disk]\nscheduler_url = \"http://x\"\n");
  EXPECT_EQ(elsewhere.scheduler_url, "");
  EXPECT_FALSE(elsewhere.has_token);
}

TEST(DistReaders, SccacheConfigPath) {
  ScopedEnv conf("SCCACHE_CONF", "/etc/kiln/sccache.conf");
  EXPECT_EQ(sccache_config_path(), "/etc/kiln/sccache.conf");
  ScopedEnv unset("SCCACHE_CONF", std::nullopt);
  ScopedEnv xdg("XDG_CONFIG_HOME", "/home/u/.cfg");
  EXPECT_EQ(sccache_config_path(), "/home/u/.cfg/sccache/config");
  ScopedEnv no_xdg("XDG_CONFIG_HOME", std::nullopt);
  ScopedEnv home("HOME", "/home/u");
  EXPECT_EQ(sccache_config_path(), "/home/u/.config/sccache/config");
}

TEST(DistReaders, SccacheLogReason) {
  // What sccache 0.16 logs when the scheduler refuses the client's token.
  SccacheLogReason rejected = sccache_log_reason(
      "[2026-12-01T08:07:25Z DEBUG sccache::compiler::compiler] [u.o]: Requesting allocation\n"
      "[2026-12-01T08:07:25Z WARN  sccache::server] State reset. Will recreate\n"
      "[2026-12-01T08:07:25Z ERROR sccache::server] [\"u.o\"] http error status: Error 401: "
      "Fixed token mismatch\n");
  EXPECT_TRUE(rejected.token_rejected);
  EXPECT_NE(rejected.lines.find("Fixed token mismatch"), std::string::npos);
  EXPECT_EQ(rejected.lines.find("Requesting allocation"), std::string::npos);
  SccacheLogReason fell_back = sccache_log_reason(
      "[x WARN  sccache::compiler::compiler] [p.o]: Could not perform distributed compile, "
      "falling back to local: failed to package toolchain\n");
  EXPECT_FALSE(fell_back.token_rejected);
  EXPECT_NE(fell_back.lines.find("failed to package toolchain"), std::string::npos);
}

TEST(DistReaders, IceccLog) {
  EngineVerdict remote = parse_icecc_log(
      "[12] asking for host to use\n[12] Have to use host 10.77.2.2:10245 - Job ID: 4 - env: "
      "x86_64 - explicit_env: 0 - match_j: 0\n");
  EXPECT_EQ(remote.host, "10.77.2.2:10245");
  EngineVerdict local = parse_icecc_log("[12] building myself, but telling localhost\n");
  EXPECT_EQ(local.host, "");
  EXPECT_NE(local.lines.find("building myself"), std::string::npos);
  EXPECT_TRUE(parse_icecc_log("[3] no local daemon found\n").no_daemon);
}

TEST(DistReaders, DistccLog) {
  EngineVerdict remote = parse_distcc_log(
      "distcc[27636] cpp t.c on localhost completed ok\n"
      "distcc[27636] 143 bytes from t.c compiled on 127.0.0.1 in 0.0301s, rate 5kB/s\n"
      "distcc[27636] compile t.c on 127.0.0.1:27632 completed ok\n");
  EXPECT_EQ(remote.host, "127.0.0.1:27632");
  EXPECT_EQ(parse_distcc_log("distcc[1] compile t.c on localhost completed ok\n").host, "");
  EngineVerdict refused = parse_distcc_log(
      "distcc[27644] ERROR: nonblocking connect to 127.0.0.1:27699 failed: Connection refused\n"
      "distcc[27644] (dcc_build_somewhere) ERROR: failed to distribute and fallbacks are "
      "disabled\n");
  EXPECT_EQ(refused.host, "");
  EXPECT_NE(refused.lines.find("Connection refused"), std::string::npos);
}

TEST(DistReaders, DistccHosts) {
  TempDirectory dir;
  ScopedEnv hosts("DISTCC_HOSTS", std::nullopt);
  ScopedEnv distcc_dir("DISTCC_DIR", dir.path().string());
  std::ofstream(dir / "hosts") << "# the cluster\n10.0.0.2/4  # fast\n10.0.0.3/2\n";
  auto found = distcc_hosts();
  ASSERT_TRUE(found);
  EXPECT_EQ(found->first, (dir / "hosts").string());
  EXPECT_EQ(found->second, "10.0.0.2/4 10.0.0.3/2");
  ScopedEnv set("DISTCC_HOSTS", "127.0.0.1:3632");
  EXPECT_EQ(distcc_hosts()->second, "127.0.0.1:3632");
}

TEST(DistReaders, UniqueProbeSources) { EXPECT_NE(unique_probe_source(), unique_probe_source()); }

TEST(Dist, UnknownEngineIsInvalidArgument) {
  EXPECT_THROW(check_dist({.engine = "bazel"}), InvalidArgument);
}

TEST(Dist, NoEngineOnPath) {
  TempDirectory empty;
  ScopedEnv path("PATH", empty.path().string());
  std::vector<Finding> findings = check_dist();
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings[0].status, Status::fail);
  EXPECT_NE(findings[0].fix.find("sccache"), std::string::npos);
}

}  // namespace
}  // namespace kiln::doctor::detail
