// icecc_account() on real icecc 1.4 client logs (testdata/icecc/README.md says how each was made).
#include "builder/icecc_account.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "testing/test_support.h"

namespace kiln::build::detail {
namespace {

using testing::read_file;

std::string captured(const std::string& name) {
  std::string text =
      read_file(std::string(KILN_SOURCE_DIR) + "/src/builder/testdata/icecc/" + name);
  EXPECT_FALSE(text.empty()) << name << " is missing";
  return text;
}

// The lines of `a` and `b` taken in turn, as two icecc runs writing one log at once would leave.
std::string interleave(const std::string& a, const std::string& b) {
  std::istringstream in_a(a);
  std::istringstream in_b(b);
  std::string line;
  std::string out;
  bool more = true;
  while (more) {
    more = false;
    for (std::istringstream* in : {&in_a, &in_b}) {
      if (!std::getline(*in, line)) continue;
      out += line + "\n";
      more = true;
    }
  }
  return out;
}

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

TEST(IceccAccount, RunsAreToldApartByPidWhenTheirLinesInterleave) {
  EngineAccount account =
      icecc_account(interleave(captured("remote.log"), captured("server_killed.log")));
  EXPECT_EQ(account.ran, "mixed");
  EXPECT_EQ(account.hosts, std::vector<std::string>{"10.77.0.3:10245"});
  EXPECT_NE(account.detail.find("compiled on 10.77.0.3:10245"), std::string::npos);
  EXPECT_NE(account.detail.find("on 10.77.0.4:10245 failed"), std::string::npos);
}

TEST(IceccAccount, APidUsedAgainStartsANewRunAndRepeatsAreCounted) {
  std::string log = captured("remote.log");
  EngineAccount account = icecc_account(log + log);
  EXPECT_EQ(account.ran, "remote");
  EXPECT_EQ(account.hosts, std::vector<std::string>{"10.77.0.3:10245"});
  EXPECT_EQ(account.detail, "icecc: compiled on 10.77.0.3:10245 (2 compiles)");
}

TEST(IceccAccount, ALogWithoutACompileSaysSo) {
  for (std::string log : {std::string(), std::string("not icecc\n\nICECC[12 broken\n")}) {
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

TEST(IceccAccount, TheLogEnvironmentNamesAnAbsoluteFileAtDebugLevel) {
  Launcher::Environment env = icecc_log_env("relative/icecc.log");
  ASSERT_TRUE(env.at("ICECC_LOGFILE").has_value());
  EXPECT_TRUE(std::filesystem::path(*env.at("ICECC_LOGFILE")).is_absolute());
  EXPECT_TRUE(env.at("ICECC_LOGFILE")->ends_with("relative/icecc.log"));
  EXPECT_EQ(env.at("ICECC_DEBUG"), "debug");
}

}  // namespace
}  // namespace kiln::build::detail
