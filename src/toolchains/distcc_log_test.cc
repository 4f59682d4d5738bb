// read_distcc_log() on distcc 3.4's own lines, captured from a client with DISTCC_VERBOSE=1 against
// a distccd on loopback (and a refused port); the "(function)" debug lines between them are left
// out where they say nothing the reader reads.
#include "kiln/distcc_log.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln {
namespace {

constexpr std::string_view kRemote = R"(distcc[10890] (main) compiler name is "distcc"
distcc[10890] compile from a.c to a.o
distcc[10890] exec on 127.0.0.1:36321: x86_64-linux-gnu-gcc -c a.c -o a.o
distcc[10890] cpp a.c on localhost completed ok
distcc[10890] 146 bytes from a.c compiled on 127.0.0.1 in 0.0579s, rate 2kB/s
distcc[10890] compile a.c on 127.0.0.1:36321 completed ok
distcc[10890] elapsed compilation time 0.058489s
)";

constexpr std::string_view kRefused = R"(distcc[10900] compile from a.c to a2.o
distcc[10900] ERROR: nonblocking connect to 127.0.0.1:36399 failed: Connection refused
distcc[10900] Warning: failed to distribute a.c to 127.0.0.1:36399, running locally instead
distcc[10900] exec on localhost: x86_64-linux-gnu-gcc -c a.c -o a2.o
distcc[10900] compile a.c on localhost completed ok
)";

// A source with an error: the daemon's compiler fails, distcc retries here, and that fails too.
constexpr std::string_view kFailedTwice = R"(distcc[897] compile from bad.c to bad.o
distcc[897] exec on 127.0.0.1:36411: x86_64-linux-gnu-gcc -c bad.c -o bad.o
distcc[897] cpp bad.c on localhost completed ok
distcc[897] 149 bytes from bad.c compiled on 127.0.0.1 in 0.0285s, rate 5kB/s
distcc[897] ERROR: compile bad.c on 127.0.0.1:36411 failed
distcc[897] (dcc_build_somewhere) Warning: remote compilation of 'bad.c' failed, retrying locally
distcc[897] Warning: failed to distribute bad.c to 127.0.0.1:36411, running locally instead
distcc[897] exec on localhost: x86_64-linux-gnu-gcc -c bad.c -o bad.o
distcc[897] ERROR: compile bad.c on localhost failed
distcc[897] elapsed compilation time 0.044645s
)";

// A source named "run on me.c": its name holds " on " in every line that names it.
constexpr std::string_view kOnInTheName = R"(distcc[4100] compile from run on me.c to space.o
distcc[4100] exec on 127.0.0.1:36411: x86_64-linux-gnu-gcc -c "run on me.c" -o space.o
distcc[4100] cpp run on me.c on localhost completed ok
distcc[4100] 162 bytes from run on me.c compiled on 127.0.0.1 in 0.0532s, rate 3kB/s
distcc[4100] compile run on me.c on 127.0.0.1:36411 completed ok
)";

TEST(DistccLog, ACompileOnADaemonNamesItNotThePreprocessingHere) {
  DistccLog log = read_distcc_log(kRemote);
  ASSERT_EQ(log.compiles.size(), 1u);
  EXPECT_EQ(log.compiles[0].host, "127.0.0.1:36321");
  EXPECT_TRUE(log.compiles[0].ok);
  EXPECT_EQ(log.fell_back, 0);
  EXPECT_EQ(log.lines,
            "distcc[10890] cpp a.c on localhost completed ok\n"
            "distcc[10890] compile a.c on 127.0.0.1:36321 completed ok");
}

TEST(DistccLog, ARefusedHostIsAFallbackCompiledOnLocalhost) {
  DistccLog log = read_distcc_log(kRefused);
  ASSERT_EQ(log.compiles.size(), 1u);
  EXPECT_EQ(log.compiles[0].host, "localhost");
  EXPECT_TRUE(log.compiles[0].ok);
  EXPECT_EQ(log.fell_back, 1);
  EXPECT_NE(log.lines.find("Connection refused"), std::string::npos) << log.lines;
}

TEST(DistccLog, FailedCompilesAreReadWithTheirHosts) {
  DistccLog log = read_distcc_log(kFailedTwice);
  ASSERT_EQ(log.compiles.size(), 2u);
  EXPECT_EQ(log.compiles[0].host, "127.0.0.1:36411");
  EXPECT_FALSE(log.compiles[0].ok);
  EXPECT_EQ(log.compiles[1].host, "localhost");
  EXPECT_FALSE(log.compiles[1].ok);
  // Only the plain "Warning: failed to distribute" line counts, not the one of a function.
  EXPECT_EQ(log.fell_back, 1);
}

TEST(DistccLog, AnOnInTheFileNameIsNotTheHost) {
  DistccLog log = read_distcc_log(kOnInTheName);
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
