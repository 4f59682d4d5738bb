// distcc's client log read for where a job's compiles ran. The lines are distcc 3.4's, captured
// from a client with DISTCC_VERBOSE=1 against a distccd on loopback (and a refused port).
#include "distcc_account.h"

#include <gtest/gtest.h>

namespace kiln::build::detail {
namespace {

constexpr std::string_view kRemote = R"(distcc[10890] (main) compiler name is "distcc"
distcc[10890] compile from a.c to a.o
distcc[10890] exec on 127.0.0.1:36321: x86_64-linux-gnu-gcc -c a.c -o a.o
distcc[10890] cpp a.c on localhost completed ok
distcc[10890] 146 bytes from a.c compiled on 127.0.0.1 in 0.0579s, rate 2kB/s
distcc[10890] compile a.c on 127.0.0.1:36321 completed ok
distcc[10890] elapsed compilation time 0.058489s
)";

constexpr std::string_view kFellBack = R"(distcc[10900] compile from a.c to a2.o
distcc[10900] ERROR: nonblocking connect to 127.0.0.1:36399 failed: Connection refused
distcc[10900] Warning: failed to distribute a.c to 127.0.0.1:36399, running locally instead
distcc[10900] exec on localhost: x86_64-linux-gnu-gcc -c a.c -o a2.o
distcc[10900] compile a.c on localhost completed ok
)";

TEST(DistccAccount, ACompileOnADaemonIsRemoteNamingIt) {
  EngineAccount account = distcc_account(kRemote);
  EXPECT_EQ(account.ran, "remote");
  EXPECT_EQ(account.hosts, std::vector<std::string>{"127.0.0.1:36321"});
  EXPECT_EQ(account.detail, "distcc: compiled on 127.0.0.1:36321");  // not the local cpp step
}

TEST(DistccAccount, AFallbackIsLocalAndSaysSo) {
  EngineAccount account = distcc_account(kFellBack);
  EXPECT_EQ(account.ran, "local");
  EXPECT_EQ(account.detail, "distcc: compiled locally (1 could not be distributed: fell back)");
  EXPECT_TRUE(account.hosts.empty());
}

TEST(DistccAccount, NoCompileInTheLogIsLocalAndNoCompile) {
  EngineAccount account = distcc_account("");
  EXPECT_EQ(account.ran, "local");
  EXPECT_EQ(account.detail, "distcc: not a compile it distributes; ran locally");
}

}  // namespace
}  // namespace kiln::build::detail
