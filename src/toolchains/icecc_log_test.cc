// read_icecc_log() on real icecc 1.4 client logs, captured for the builder's account of a job
// (src/toolchains/testdata/icecc/README.md says how each was made), and the variables that make
// icecc write them.
#include "kiln/icecc_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "testing/test_support.h"

namespace kiln {
namespace {

std::string captured(const std::string& name) { return testing::captured_log("icecc/" + name); }

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

TEST(IceccLog, ACompileSentToAServerIsOneRemoteRunWithItsHost) {
  IceccLog log = read_icecc_log(captured("remote.log"));
  ASSERT_EQ(log.runs.size(), 1u);  // not the preprocessor fork (pid 25242) too
  EXPECT_EQ(log.runs[0].host, "10.77.0.3:10245");
  EXPECT_FALSE(log.runs[0].compiled_here);
  EXPECT_TRUE(log.runs[0].remote());
  EXPECT_EQ(log.runs[0].failure, "");
  EXPECT_FALSE(log.no_daemon);
  EXPECT_NE(log.lines.find("Have to use host 10.77.0.3:10245"), std::string::npos) << log.lines;
}

TEST(IceccLog, TheSchedulerGivingTheCompileToThisHostIsALocalRunWithoutHost) {
  IceccLog log = read_icecc_log(captured("scheduled_here.log"));
  ASSERT_EQ(log.runs.size(), 1u);
  EXPECT_EQ(log.runs[0].host, "");
  EXPECT_TRUE(log.runs[0].compiled_here);
  EXPECT_FALSE(log.runs[0].remote());
  EXPECT_EQ(log.runs[0].local_reason, "the scheduler gave the compile to this host");
  EXPECT_NE(log.lines.find("building myself, but telling localhost"), std::string::npos);
}

TEST(IceccLog, ACommandThatIsNoCompileKeepsIceccsReason) {
  IceccLog log = read_icecc_log(captured("not_a_compile.log"));
  ASSERT_EQ(log.runs.size(), 1u);
  EXPECT_TRUE(log.runs[0].compiled_here);
  EXPECT_EQ(log.runs[0].local_reason, "neither -c nor -S argument, building locally");
}

TEST(IceccLog, AServerKilledMidCompileKeepsTheServerAndTheErrorOfTheLocalFallback) {
  IceccLog log = read_icecc_log(captured("server_killed.log"));
  ASSERT_EQ(log.runs.size(), 1u);
  EXPECT_EQ(log.runs[0].host, "10.77.0.4:10245");
  EXPECT_TRUE(log.runs[0].compiled_here);
  EXPECT_FALSE(log.runs[0].remote());
  EXPECT_EQ(log.runs[0].failure, "Error 14 - error reading message from remote (10.77.0.4)");
  EXPECT_NE(log.lines.find("got exception Error 14"), std::string::npos) << log.lines;
}

TEST(IceccLog, ARemoteCompileErrorRecompiledHereIsAFailure) {
  IceccLog log = read_icecc_log(captured("remote_compile_error.log"));
  ASSERT_EQ(log.runs.size(), 1u);
  EXPECT_EQ(log.runs[0].host, "10.77.0.3:10245");
  EXPECT_TRUE(log.runs[0].compiled_here);
  EXPECT_EQ(log.runs[0].failure,
            "Error 102 - command needs stdout/stderr workaround, recompiling locally");
}

TEST(IceccLog, NoDaemonToAskIsSaidAndIsTheLocalReason) {
  IceccLog log = read_icecc_log(captured("no_daemon.log"));
  EXPECT_TRUE(log.no_daemon);
  ASSERT_EQ(log.runs.size(), 1u);
  EXPECT_TRUE(log.runs[0].compiled_here);
  EXPECT_EQ(log.runs[0].local_reason, "no local iceccd answered");
  EXPECT_NE(log.lines.find("no local daemon found"), std::string::npos) << log.lines;
}

TEST(IceccLog, TwoRunsOfOneLogAreReadInTheOrderTheyStarted) {
  IceccLog log = read_icecc_log(captured("two_compiles.log"));
  ASSERT_EQ(log.runs.size(), 2u);
  EXPECT_TRUE(log.runs[0].compiled_here);
  EXPECT_EQ(log.runs[0].host, "");
  EXPECT_TRUE(log.runs[1].remote());
  EXPECT_EQ(log.runs[1].host, "10.77.0.3:10245");
}

TEST(IceccLog, RunsAreToldApartByPidWhenTheirLinesInterleave) {
  IceccLog log = read_icecc_log(interleave(captured("remote.log"), captured("server_killed.log")));
  ASSERT_EQ(log.runs.size(), 2u);
  EXPECT_EQ(log.runs[0].host, "10.77.0.3:10245");
  EXPECT_TRUE(log.runs[0].remote());
  EXPECT_EQ(log.runs[1].host, "10.77.0.4:10245");
  EXPECT_TRUE(log.runs[1].compiled_here);
  EXPECT_NE(log.runs[1].failure.find("Error 14"), std::string::npos);
}

TEST(IceccLog, APidUsedAgainStartsANewRun) {
  std::string once = captured("remote.log");
  IceccLog log = read_icecc_log(once + once);
  ASSERT_EQ(log.runs.size(), 2u);
  EXPECT_EQ(log.runs[1].host, "10.77.0.3:10245");
  EXPECT_TRUE(log.runs[1].remote());
}

TEST(IceccLog, ARunCutShortBeforeItsOutcomeHasNone) {
  std::string log = captured("remote.log");
  IceccLog cut = read_icecc_log(log.substr(0, log.find("Have to use host")));
  ASSERT_EQ(cut.runs.size(), 1u);
  EXPECT_EQ(cut.runs[0].host, "");
  EXPECT_FALSE(cut.runs[0].compiled_here);
}

TEST(IceccLog, LinesThatAreNotIceccsStartNoRun) {
  for (const std::string& text :
       {std::string(), std::string("not icecc\n\nICECC[12 broken\n"),
        std::string("[12] Have to use host 10.77.2.2:10245 - Job ID: 4\n"),
        std::string("ICECC[7] 2026-12-01 08:09:00: Have to use host "
                    "10.77.0.3:10245 - Job ID: 3\n")}) {
    IceccLog log = read_icecc_log(text);
    EXPECT_TRUE(log.runs.empty()) << text;  // the last: a pid that never said "invoked as"
    EXPECT_FALSE(log.no_daemon);
  }
}

TEST(IceccLog, TheExplainingLinesAreTheLastSixThatSayWhereAndWhy) {
  IceccLog log = read_icecc_log(captured("two_compiles.log") + captured("server_killed.log") +
                                captured("remote_compile_error.log"));
  EXPECT_EQ(std::count(log.lines.begin(), log.lines.end(), '\n'), 5) << log.lines;
  EXPECT_TRUE(
      log.lines.starts_with("ICECC[31487] 2026-12-01 08:11:32: Have to use host "
                            "10.77.0.4:10245"))
      << log.lines;
  EXPECT_TRUE(
      log.lines.ends_with("local build forced by remote exception: Error 102 - command "
                          "needs stdout/stderr workaround, recompiling locally"))
      << log.lines;
  EXPECT_EQ(log.lines.find("building myself"), std::string::npos) << log.lines;  // older than six
}

TEST(IceccLog, TheLogEnvironmentNamesAnAbsoluteFileAtDebugLevel) {
  Launcher::Environment env = icecc_log_env("relative/icecc.log");
  ASSERT_TRUE(env.at("ICECC_LOGFILE").has_value());
  EXPECT_TRUE(std::filesystem::path(*env.at("ICECC_LOGFILE")).is_absolute());
  EXPECT_TRUE(env.at("ICECC_LOGFILE")->ends_with("relative/icecc.log"));
  EXPECT_EQ(env.at("ICECC_DEBUG"), "debug");
}

}  // namespace
}  // namespace kiln
