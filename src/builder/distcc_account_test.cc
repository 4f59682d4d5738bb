// distcc's client log read for where a job's compiles ran. The lines are distcc 3.4's, captured
// from a client with DISTCC_VERBOSE=1 against a distccd on loopback (and a refused port).
#include "distcc_account.h"

#include <gtest/gtest.h>

#include "testing/test_support.h"

namespace kiln::build::detail {
namespace {

using testing::captured_log;

TEST(DistccAccount, ACompileOnADaemonIsRemoteNamingIt) {
  EngineAccount account = distcc_account(captured_log("distcc/remote.log"));
  EXPECT_EQ(account.ran, "remote");
  EXPECT_EQ(account.hosts, std::vector<std::string>{"127.0.0.1:36321"});
  EXPECT_EQ(account.detail, "distcc: compiled on 127.0.0.1:36321");  // not the local cpp step
}

TEST(DistccAccount, AFallbackIsLocalAndSaysSo) {
  EngineAccount account = distcc_account(captured_log("distcc/fell_back.log"));
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
