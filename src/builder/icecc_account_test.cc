// icecc_account() on real icecc 1.4 client logs (src/toolchains/testdata/icecc/README.md says how
// each was made): the account told from the runs; how the log is read into runs is
// toolchains/icecc_log_test.cc's.
#include "builder/icecc_account.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/test_support.h"

namespace kiln::build::detail {
namespace {

std::string captured(const std::string& name) { return testing::captured_log("icecc/" + name); }

TEST(IceccAccount, ACompileTheSchedulerSentToAServerIsRemote) {
  EngineAccount account = icecc_account(captured("remote.log"));
  EXPECT_EQ(account.ran, "remote");
  EXPECT_EQ(account.hosts, std::vector<std::string>{"10.77.0.3:10245"});
  EXPECT_EQ(account.detail, "icecc: compiled on 10.77.0.3:10245");
}

TEST(IceccAccount, ACompileTheSchedulerGaveToThisHostIsLocal) {
  EngineAccount account = icecc_account(captured("scheduled_here.log"));
  EXPECT_EQ(account.ran, "local");
  EXPECT_TRUE(account.hosts.empty());
  EXPECT_EQ(account.detail, "icecc: compiled here (the scheduler gave the compile to this host)");
}

TEST(IceccAccount, ACommandThatIsNoCompileIsLocalWithIceccsReason) {
  EngineAccount account = icecc_account(captured("not_a_compile.log"));
  EXPECT_EQ(account.ran, "local");
  EXPECT_EQ(account.detail, "icecc: compiled here (neither -c nor -S argument, building locally)");
}

TEST(IceccAccount, AServerKilledMidCompileIsALocalFallbackNamingServerAndError) {
  EngineAccount account = icecc_account(captured("server_killed.log"));
  EXPECT_EQ(account.ran, "local");
  EXPECT_TRUE(account.hosts.empty());
  EXPECT_EQ(
      account.detail,
      "icecc: compiled here after the remote compile on 10.77.0.4:10245 failed: Error 14 - error "
      "reading message from remote (10.77.0.4)");
}

TEST(IceccAccount, ARemoteCompileErrorRecompiledHereIsLocal) {
  EngineAccount account = icecc_account(captured("remote_compile_error.log"));
  EXPECT_EQ(account.ran, "local");
  EXPECT_NE(account.detail.find("after the remote compile on 10.77.0.3:10245 failed: Error 102"),
            std::string::npos)
      << account.detail;
}

TEST(IceccAccount, NoDaemonToAskIsLocal) {
  EngineAccount account = icecc_account(captured("no_daemon.log"));
  EXPECT_EQ(account.ran, "local");
  EXPECT_EQ(account.detail, "icecc: compiled here (no local iceccd answered)");
}

TEST(IceccAccount, OneLocalAndOneRemoteCompileInOneLogAreMixed) {
  EngineAccount account = icecc_account(captured("two_compiles.log"));
  EXPECT_EQ(account.ran, "mixed");
  EXPECT_EQ(account.hosts, std::vector<std::string>{"10.77.0.3:10245"});
  EXPECT_EQ(account.detail,
            "icecc: compiled here (the scheduler gave the compile to this host); compiled on "
            "10.77.0.3:10245");
}

TEST(IceccAccount, RunsWithTheSameOutcomeAreToldOnceAndCounted) {
  std::string log = captured("remote.log");
  EngineAccount account = icecc_account(log + log);
  EXPECT_EQ(account.ran, "remote");
  EXPECT_EQ(account.hosts, std::vector<std::string>{"10.77.0.3:10245"});
  EXPECT_EQ(account.detail, "icecc: compiled on 10.77.0.3:10245 (2 compiles)");
}

TEST(IceccAccount, ALogWithoutACompileSaysSo) {
  for (const std::string& log : {std::string(), std::string("not icecc\n\nICECC[12 broken\n")}) {
    EngineAccount account = icecc_account(log);
    EXPECT_EQ(account.ran, "");
    EXPECT_TRUE(account.hosts.empty());
    EXPECT_EQ(account.detail, "icecc: it logged no compile");
  }
}

TEST(IceccAccount, ARunCutShortBeforeItsOutcomeIsNotCounted) {
  std::string log = captured("remote.log");
  log = log.substr(0, log.find("Have to use host"));  // icecc stopped while asking for a host
  EngineAccount account = icecc_account(log);
  EXPECT_EQ(account.ran, "");
  EXPECT_EQ(account.detail, "icecc: no compile logged (it stopped before compiling)");
}

}  // namespace
}  // namespace kiln::build::detail
