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
  // icecc 1.4's lines (ICECC_DEBUG=debug) of one compile the scheduler gave to a server.
  EngineVerdict remote = icecc_verdict(
      "ICECC[25239] 2026-12-01 08:09:00: invoked as: icecc gcc -c probe.c -o probe.o\n"
      "ICECC[25239] 2026-12-01 08:09:00: asking for host to use\n"
      "ICECC[25239] 2026-12-01 08:09:01: Have to use host 10.77.2.2:10245 - Job ID: 4 - env: "
      "x86_64 - has env: false - match j: 0\n"
      "ICECC[25239] 2026-12-01 08:09:01: connected to 10.77.2.2\n");
  EXPECT_EQ(remote.host, "10.77.2.2:10245");
  EXPECT_FALSE(remote.no_daemon);
  EngineVerdict local = icecc_verdict(
      "ICECC[25791] 2026-12-01 08:09:27: invoked as: icecc gcc -c probe.c -o probe.o\n"
      "ICECC[25791] 2026-12-01 08:09:32: asking for host to use\n"
      "ICECC[25791] 2026-12-01 08:09:32: building myself, but telling localhost\n"
      "ICECC[25791] 2026-12-01 08:09:32: invoking: /usr/bin/gcc -c probe.c -o probe.o\n");
  EXPECT_EQ(local.host, "");
  EXPECT_NE(local.lines.find("building myself"), std::string::npos);
  EngineVerdict no_daemon = icecc_verdict(
      "ICECC[32205] 2026-12-01 08:12:36: invoked as: icecc gcc -c probe.c -o probe.o\n"
      "ICECC[32205] 2026-12-01 08:12:36: connect failed on 127.0.0.1\n"
      "ICECC[32205] 2026-12-01 08:12:36: no local daemon found\n"
      "ICECC[32205] 2026-12-01 08:12:36: invoking: /usr/bin/gcc -c probe.c -o probe.o\n");
  EXPECT_TRUE(no_daemon.no_daemon);
  EXPECT_EQ(no_daemon.host, "");
}

TEST(DistReaders, IceccLogOfACompileBuiltHereAfterAllIsLocal) {
  // The scheduler named a server, whose iceccd died mid-compile: icecc compiled here instead.
  EngineVerdict fell_back = icecc_verdict(
      "ICECC[31487] 2026-12-01 08:11:32: invoked as: icecc gcc -c probe.c -o probe.o\n"
      "ICECC[31487] 2026-12-01 08:11:32: Have to use host 10.77.0.4:10245 - Job ID: 9 - env: "
      "x86_64 - has env: false - match j: 0\n"
      "ICECC[31487] 2026-12-01 08:11:38: got exception Error 14 - error reading message from "
      "remote (10.77.0.4) \n"
      "ICECC[31487] 2026-12-01 08:11:38: invoking: /usr/bin/gcc -c probe.c -o probe.o\n");
  EXPECT_EQ(fell_back.host, "");
  EXPECT_NE(fell_back.lines.find("got exception Error 14"), std::string::npos);
  // Two runs in one log, one of them built here: not "the compile ran on a server".
  EngineVerdict mixed = icecc_verdict(
      "ICECC[32208] 2026-12-01 08:12:36: invoked as: icecc gcc -O2 -c a.c -o a_m.o\n"
      "ICECC[32208] 2026-12-01 08:12:36: building myself, but telling localhost\n"
      "ICECC[32208] 2026-12-01 08:12:36: invoking: /usr/bin/gcc -O2 -c a.c -o a_m.o\n"
      "ICECC[32212] 2026-12-01 08:12:36: invoked as: icecc gcc -O2 -c b.c -o b_m.o\n"
      "ICECC[32212] 2026-12-01 08:12:36: Have to use host 10.77.0.3:10245 - Job ID: 12 - env: "
      "x86_64 - has env: true - match j: 0\n");
  EXPECT_EQ(mixed.host, "");
}

TEST(DistReaders, DistccLog) {
  EngineVerdict remote = distcc_verdict(
      "distcc[27636] cpp t.c on localhost completed ok\n"
      "distcc[27636] 143 bytes from t.c compiled on 127.0.0.1 in 0.0301s, rate 5kB/s\n"
      "distcc[27636] compile t.c on 127.0.0.1:27632 completed ok\n");
  EXPECT_EQ(remote.host, "127.0.0.1:27632");
  EXPECT_EQ(distcc_verdict("distcc[1] compile t.c on localhost completed ok\n").host, "");
  EngineVerdict refused = distcc_verdict(
      "distcc[27644] ERROR: nonblocking connect to 127.0.0.1:27699 failed: Connection refused\n"
      "distcc[27644] (dcc_build_somewhere) ERROR: failed to distribute and fallbacks are "
      "disabled\n");
  EXPECT_EQ(refused.host, "");
  EXPECT_NE(refused.lines.find("Connection refused"), std::string::npos);
  // The daemon's compiler failed (a source with an error): it ran there, but not "completed ok".
  EngineVerdict failed =
      distcc_verdict("distcc[910] ERROR: compile bad.c on 127.0.0.1:36411 failed\n");
  EXPECT_EQ(failed.host, "");
  EXPECT_NE(failed.lines.find("failed"), std::string::npos);
  // A source whose name holds " on ".
  EXPECT_EQ(
      distcc_verdict("distcc[4100] compile run on me.c on 127.0.0.1:36411 completed ok\n").host,
      "127.0.0.1:36411");
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
