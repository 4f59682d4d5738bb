// kiln doctor's check of the remote cache, against a real redis-server and nginx (WebDAV): a
// working server passes with its latency, a read-write one is written and read back, wrong
// credentials and a server that is not there fail naming the server, never the password.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "testing/cache_servers.h"

namespace kiln {
namespace {

using nlohmann::json;
using testing::kiln_cli;
using testing::RedisServer;
using testing::WebdavServer;
using Env = std::map<std::string, std::optional<std::string>>;

// The doctor's "remote cache" finding, or null when it has none.
json remote_finding(const Env& env) {
  RunResult r = kiln_cli({"doctor", "--json"}, env);
  json list = json::parse(r.output);
  for (const json& f : list) {
    if (f["check"] == "remote cache") return f;
  }
  return nullptr;
}

TEST(DoctorRemoteCacheCli, NoneConfiguredNoFinding) {
  EXPECT_TRUE(remote_finding({{"KILN_REMOTE_CACHE", std::nullopt}}).is_null());
}

TEST(DoctorRemoteCacheCli, AWorkingServerPassesAndAReadWriteOneIsWrittenAndReadBack) {
  if (auto why = RedisServer::missing()) GTEST_SKIP() << *why;
  if (auto why = WebdavServer::missing()) GTEST_SKIP() << *why;
  RedisServer redis(RedisServer::Options{});
  ASSERT_TRUE(redis.running()) << redis.why();
  WebdavServer webdav(WebdavServer::Options{});
  ASSERT_TRUE(webdav.running()) << webdav.why();
  for (const std::string& url : {redis.url(), webdav.url()}) {
    json ro =
        remote_finding({{"KILN_REMOTE_CACHE", url}, {"KILN_REMOTE_CACHE_MODE", std::nullopt}});
    ASSERT_FALSE(ro.is_null()) << url;
    EXPECT_EQ(ro["status"], "PASS") << ro.dump();
    std::string finding = ro["finding"];
    EXPECT_NE(finding.find("(read-only)"), std::string::npos) << finding;
    EXPECT_NE(finding.find(" ms"), std::string::npos) << finding;
    json rw =
        remote_finding({{"KILN_REMOTE_CACHE", url}, {"KILN_REMOTE_CACHE_MODE", "read-write"}});
    EXPECT_EQ(rw["status"], "PASS") << rw.dump();
    EXPECT_NE(rw["finding"].get<std::string>().find("read back"), std::string::npos) << rw.dump();
  }
  // The probe cleaned up after itself.
  EXPECT_TRUE(std::filesystem::is_empty(webdav.objects() / "cas")) << webdav.objects();
}

TEST(DoctorRemoteCacheCli, WrongCredentialsAndNoServerFailWithoutThePassword) {
  if (auto why = RedisServer::missing()) GTEST_SKIP() << *why;
  RedisServer redis({.password = "the-right-one"});
  ASSERT_TRUE(redis.running()) << redis.why();
  json wrong = remote_finding({{"KILN_REMOTE_CACHE", redis.url_with(":not-the-password")}});
  ASSERT_FALSE(wrong.is_null());
  EXPECT_EQ(wrong["status"], "FAIL") << wrong.dump();
  EXPECT_EQ(wrong.dump().find("not-the-password"), std::string::npos) << wrong.dump();
  EXPECT_NE(wrong["finding"].get<std::string>().find("***"), std::string::npos) << wrong.dump();
  json gone =
      remote_finding({{"KILN_REMOTE_CACHE",
                       "redis://127.0.0.1:" + std::to_string(testing::unused_loopback_port())}});
  EXPECT_EQ(gone["status"], "FAIL") << gone.dump();
  json mode =
      remote_finding({{"KILN_REMOTE_CACHE", redis.url()}, {"KILN_REMOTE_CACHE_MODE", "rw"}});
  EXPECT_EQ(mode["status"], "FAIL") << mode.dump();
  EXPECT_NE(mode["finding"].get<std::string>().find("rw"), std::string::npos) << mode.dump();
}

}  // namespace
}  // namespace kiln
