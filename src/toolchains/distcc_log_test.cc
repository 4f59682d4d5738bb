// read_distcc_log() on distcc 3.4's own lines, captured from a client with DISTCC_VERBOSE=1 against
// a distccd on loopback (and a refused port); the "(function)" debug lines between them are left
// out where they say nothing the reader reads.
#include "kiln/distcc_log.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/test_support.h"

namespace kiln {
namespace {

using testing::captured_log;

TEST(DistccLog, ACompileOnADaemonNamesItNotThePreprocessingHere) {
  DistccLog log = read_distcc_log(captured_log("distcc/remote.log"));
  ASSERT_EQ(log.compiles.size(), 1u);
  EXPECT_EQ(log.compiles[0].host, "127.0.0.1:36321");
  EXPECT_TRUE(log.compiles[0].ok);
  EXPECT_EQ(log.fell_back, 0);
  EXPECT_EQ(log.lines,
            "distcc[10890] cpp a.c on localhost completed ok\n"
            "distcc[10890] compile a.c on 127.0.0.1:36321 completed ok");
}

TEST(DistccLog, ARefusedHostIsAFallbackCompiledOnLocalhost) {
  DistccLog log = read_distcc_log(captured_log("distcc/fell_back.log"));
  ASSERT_EQ(log.compiles.size(), 1u);
  EXPECT_EQ(log.compiles[0].host, "localhost");
  EXPECT_TRUE(log.compiles[0].ok);
  EXPECT_EQ(log.fell_back, 1);
  EXPECT_NE(log.lines.find("Connection refused"), std::string::npos) << log.lines;
}

TEST(DistccLog, FailedCompilesAreReadWithTheirHosts) {
  DistccLog log = read_distcc_log(captured_log("distcc/failed_twice.log"));
  ASSERT_EQ(log.compiles.size(), 2u);
  EXPECT_EQ(log.compiles[0].host, "127.0.0.1:36411");
  EXPECT_FALSE(log.compiles[0].ok);
  EXPECT_EQ(log.compiles[1].host, "localhost");
  EXPECT_FALSE(log.compiles[1].ok);
  // Only the plain "Warning: failed to distribute" line counts, not the one of a function.
  EXPECT_EQ(log.fell_back, 1);
}

TEST(DistccLog, AnOnInTheFileNameIsNotTheHost) {
  DistccLog log = read_distcc_log(captured_log("distcc/on_in_the_name.log"));
  ASSERT_EQ(log.compiles.size(), 1u);
  EXPECT_EQ(log.compiles[0].host, "127.0.0.1:36411");
}

TEST(DistccLog, LinesThatAreNotDistccsAreIgnored) {
  DistccLog log = read_distcc_log(
      "compile a.c on 10.0.0.2:3632 completed ok\n"       // no distcc[pid] prefix
      "a.c:1:23: error: expected ';' before '}' token\n"  // the compiler's own
      "distcc[5] compile from a on b.c to a.o\n");        // names no host
  EXPECT_TRUE(log.compiles.empty());
  EXPECT_EQ(log.fell_back, 0);
  EXPECT_TRUE(read_distcc_log("").compiles.empty());
}

TEST(DistccLog, CarriageReturnsDoNotHideTheOutcome) {
  DistccLog log = read_distcc_log("distcc[10890] compile a.c on 127.0.0.1:36321 completed ok\r\n");
  ASSERT_EQ(log.compiles.size(), 1u);
  EXPECT_EQ(log.compiles[0].host, "127.0.0.1:36321");
  EXPECT_TRUE(log.compiles[0].ok);
}

TEST(DistccLog, TheLogEnvironmentNamesTheFileVerbosely) {
  Launcher::Environment env = distcc_log_env("/w/l.log");
  EXPECT_EQ(env.at("DISTCC_LOG"), "/w/l.log");
  EXPECT_EQ(env.at("DISTCC_VERBOSE"), "1");
}

}  // namespace
}  // namespace kiln
