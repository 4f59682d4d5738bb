#include "kiln/remote_store.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "internal/curl_library.h"
#include "internal/fd.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/cache_servers.h"
#include "testing/namespace_network.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::FaultyServer;
using testing::RedisServer;
using testing::WebdavServer;

constexpr std::string_view kHex = "0123456789abcdef0123456789abcdef";
constexpr std::string_view kSecret = "hunter2-s3cret";

std::unique_ptr<RemoteStore> open_url(const std::string& url,
                                      std::chrono::milliseconds timeout = 3000ms) {
  RemoteStoreOptions options = RemoteStoreOptions::parse(url);
  options.connect_timeout = std::min<std::chrono::milliseconds>(timeout, 1000ms);
  options.operation_timeout = timeout;
  return open_remote_store(options);
}

// The message of the RemoteStoreError `fn` throws; "no RemoteStoreError" (and a failure) else.
std::string remote_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const RemoteStoreError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a RemoteStoreError: " << e.what();
    return "not a RemoteStoreError";
  }
  ADD_FAILURE() << "no error";
  return "no RemoteStoreError";
}

// The message of the InvalidArgument RemoteStoreOptions::parse(url) throws.
std::string parse_error(const std::string& url) {
  try {
    RemoteStoreOptions::parse(url);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << url << " was accepted";
  return {};
}

std::string binary_bytes(size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
  return bytes;
}

std::string hex_name(int i) {
  std::string name = std::to_string(i);
  return std::string(32 - name.size(), 'a') + name;
}

double seconds_of(const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What every backend must do with objects: round trips, binary bytes, a big object, misses,
// replacement and removal.
void check_round_trips(RemoteStore& store) {
  EXPECT_EQ(store.get("ac", kHex), std::nullopt);
  EXPECT_FALSE(store.contains("ac", kHex));
  store.put("ac", kHex, "first");
  store.put("ac", kHex, "second");  // replaces
  EXPECT_EQ(store.get("ac", kHex), "second");
  EXPECT_TRUE(store.contains("ac", kHex));
  EXPECT_FALSE(store.contains("cas", kHex));  // kinds are apart

  std::string binary("\0\x01\xff\0\r\n$-1\r\n\0", 12);
  store.put("cas", "00", binary);
  EXPECT_EQ(store.get("cas", "00"), binary);
  store.put("cas", "01", "");
  EXPECT_EQ(store.get("cas", "01"), "");

  std::string big = binary_bytes(5 << 20);
  store.put("cas", "beef", big);
  std::optional<std::string> got = store.get("cas", "beef");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->size(), big.size());
  EXPECT_TRUE(*got == big);

  store.remove("ac", kHex);
  EXPECT_EQ(store.get("ac", kHex), std::nullopt);
  EXPECT_FALSE(store.contains("ac", kHex));
  store.remove("ac", kHex);  // not there: no error
}

// 8 threads, each with objects of its own and a shared one, on one store.
void check_concurrent_use(RemoteStore& store) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        std::string name = hex_name(t * 1000 + i);
        std::string bytes = binary_bytes(100 + static_cast<size_t>(t * 10 + i));
        store.put("cas", name, bytes);
        if (store.get("cas", name) != bytes || !store.contains("cas", name)) ++wrong;
        if (store.get("ac", "5ba7ed") != "shared") ++wrong;
        if (i % 2 == 0) store.remove("cas", name);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

// What every backend must do with reply limits: the caller's (a content object is at most the
// size its action entry names), the action entry's default, and a miss under any limit.
void check_reply_limits(RemoteStore& store, const std::string& name) {
  store.put("cas", kHex, binary_bytes(1000));
  EXPECT_EQ(store.get("cas", kHex, 1000)->size(), 1000u);
  std::string over = remote_error([&] { store.get("cas", kHex, 999); });
  EXPECT_NE(over.find(name + ": "), std::string::npos) << over;
  EXPECT_NE(over.find(std::string(kHex)), std::string::npos) << over;
  EXPECT_NE(over.find("reply of 1000 bytes exceeds the 999-byte limit for a content object"),
            std::string::npos)
      << over;
  EXPECT_EQ(store.get("cas", kHex)->size(), 1000u) << "the store goes on after a refusal";
  store.put("ac", kHex, std::string(kRemoteActionEntryLimit + 1, 'a'));
  std::string entry = remote_error([&] { store.get("ac", kHex); });
  EXPECT_NE(entry.find("reply of 65537 bytes exceeds the 65536-byte limit for an action entry"),
            std::string::npos)
      << entry;
  EXPECT_EQ(store.get("cas", "feed", 10), std::nullopt);  // a miss is no reply of a size
}

// --- URLs ---

TEST(RemoteStore, ParsesRedisUrls) {
  RemoteStoreOptions a = RemoteStoreOptions::parse("redis://cache.example:6380/2");
  EXPECT_EQ(a.scheme, "redis");
  EXPECT_EQ(a.url, "redis://cache.example:6380/2");
  EXPECT_EQ(a.host, "cache.example");
  EXPECT_EQ(a.port, 6380);
  EXPECT_EQ(a.database, 2);
  EXPECT_EQ(a.user, std::nullopt);
  EXPECT_EQ(a.password, std::nullopt);

  RemoteStoreOptions b = RemoteStoreOptions::parse("redis://cache/");
  EXPECT_EQ(b.port, 6379);
  EXPECT_EQ(b.database, 0);

  RemoteStoreOptions c = RemoteStoreOptions::parse("redis://alice:p%40ss/w@rd@[::1]:7000/1");
  EXPECT_EQ(c.host, "::1");
  EXPECT_EQ(c.port, 7000);
  EXPECT_EQ(c.user, "alice");
  EXPECT_EQ(c.password,
            "p@ss/w@rd");  // unescaped '/' and '@' too: the user info ends at the last '@'

  EXPECT_EQ(RemoteStoreOptions::parse("redis://:s3cret@cache").password, "s3cret");
  EXPECT_EQ(RemoteStoreOptions::parse("redis://:s3cret@cache").user, std::nullopt);
  // ccache's redis://PASSWORD@host: a user info without ':' is the password.
  RemoteStoreOptions d = RemoteStoreOptions::parse("redis://s3cret@cache");
  EXPECT_EQ(d.password, "s3cret");
  EXPECT_EQ(d.user, std::nullopt);
}

TEST(RemoteStore, ParsesUnixSocketUrls) {
  RemoteStoreOptions a = RemoteStoreOptions::parse("redis+unix:///run/redis/redis.sock?db=3");
  EXPECT_EQ(a.scheme, "redis+unix");
  EXPECT_EQ(a.socket, "/run/redis/redis.sock");
  EXPECT_EQ(a.database, 3);
  RemoteStoreOptions b = RemoteStoreOptions::parse("redis+unix://bob:pw@/tmp/r.sock");
  EXPECT_EQ(b.socket, "/tmp/r.sock");
  EXPECT_EQ(b.database, 0);
  EXPECT_EQ(b.user, "bob");
  EXPECT_EQ(b.password, "pw");
}

TEST(RemoteStore, ParsesHttpUrls) {
  RemoteStoreOptions a = RemoteStoreOptions::parse("http://cache");
  EXPECT_EQ(a.scheme, "http");
  EXPECT_EQ(a.host, "cache");
  EXPECT_EQ(a.port, 80);
  EXPECT_EQ(a.path_prefix, "");
  RemoteStoreOptions b = RemoteStoreOptions::parse("https://cache.example:8443/kiln/v1/");
  EXPECT_EQ(b.scheme, "https");
  EXPECT_EQ(b.port, 8443);
  EXPECT_EQ(b.path_prefix, "/kiln/v1");
  RemoteStoreOptions c = RemoteStoreOptions::parse("https://ci:t%3Aok@cache");
  EXPECT_EQ(c.port, 443);
  EXPECT_EQ(c.user, "ci");
  EXPECT_EQ(c.password, "t:ok");
  RemoteStoreOptions d = RemoteStoreOptions::parse("http://ci@cache");  // a user name alone
  EXPECT_EQ(d.user, "ci");
  EXPECT_EQ(d.password, std::nullopt);
}

TEST(RemoteStore, BadUrlsAreInvalidArgumentsNamingTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"cache:6379", "no scheme"},
      {"ftp://cache", "the scheme 'ftp'"},
      {"rediss://cache", "TLS"},
      {"redis://", "no host"},
      {"redis://:hunter2-s3cret@", "no host"},
      {"redis://cache:0", "port '0'"},
      {"redis://cache:99999", "port '99999'"},
      {"redis://:hunter2-s3cret@cache:port", "port 'port'"},
      {"redis://cache/zero", "database 'zero'"},
      {"redis://cache/1?password=x", "query"},
      {"redis://::1:6379", "brackets"},
      {"redis://[::1:6379", "']'"},
      {"redis+unix://cache/run/redis.sock", "names no host"},
      {"redis+unix://", "no socket path"},
      {"redis+unix:///run/redis.sock?db=x", "not a number"},
      {"redis+unix:///run/redis.sock?timeout=1", "?db=N"},
      {"http://cache/prefix?x=1", "query"},
      {"http://cache/#top", "fragment"},
      {"http://cache/a b", "space"},
      {"redis://al%ice:hunter2-s3cret@cache", "%-escape"},
  };
  for (const auto& [url, problem] : cases) {
    std::string message = parse_error(url);
    EXPECT_NE(message.find(problem), std::string::npos) << url << ": " << message;
    EXPECT_EQ(message.find(kSecret), std::string::npos) << message;
  }
}

TEST(RemoteStore, RedactsCredentials) {
  EXPECT_EQ(redacted_url("redis://:hunter2@cache:6379/1"), "redis://***@cache:6379/1");
  EXPECT_EQ(redacted_url("redis://alice:hunter2@cache"), "redis://***@cache");
  EXPECT_EQ(redacted_url("redis://hunter2@cache"), "redis://***@cache");  // a password alone
  EXPECT_EQ(redacted_url("redis+unix://:hunter2@/run/r.sock?db=2"),
            "redis+unix://***@/run/r.sock?***");
  EXPECT_EQ(redacted_url("https://ci:hunter2@cache/kiln"), "https://***@cache/kiln");
  EXPECT_EQ(redacted_url("redis://u:p@ss/w#rd@cache"), "redis://***@cache");
  EXPECT_EQ(redacted_url("https://cache/kiln"), "https://cache/kiln");
  EXPECT_EQ(redacted_url("not a url"), "not a url");
  EXPECT_EQ(redacted_url("user:hunter2@cache"), "***@cache");
}

// A token given as the user (http://TOKEN@host) or in a query is never printed: not in the
// name, not in a parse error, not in an operation's error.
TEST(RemoteStore, RedactsTokensInTheUserPartAndTheQuery) {
  EXPECT_EQ(redacted_url("http://hunter2-s3cret@cache"), "http://***@cache");
  EXPECT_EQ(redacted_url("https://cache/kiln?token=hunter2-s3cret"), "https://cache/kiln?***");
  EXPECT_EQ(redacted_url("https://cache/kiln?a=1#hunter2-s3cret"), "https://cache/kiln?***");
  EXPECT_EQ(redacted_url("https://cache#hunter2-s3cret"), "https://cache#***");
  std::string query = parse_error("https://cache/kiln?token=hunter2-s3cret");
  EXPECT_NE(query.find("https://cache/kiln?***: a query"), std::string::npos) << query;
  EXPECT_EQ(query.find(kSecret), std::string::npos) << query;
  std::string port = parse_error("http://hunter2-s3cret@cache:x");
  EXPECT_NE(port.find("http://***@cache:x"), std::string::npos) << port;
  EXPECT_EQ(port.find(kSecret), std::string::npos) << port;
  std::string refused =
      "http://hunter2-s3cret@127.0.0.1:" + std::to_string(testing::unused_loopback_port());
  std::unique_ptr<RemoteStore> redis = open_url("redis" + refused.substr(4));
  EXPECT_EQ(redis->name().find(kSecret), std::string::npos) << redis->name();
  EXPECT_EQ(remote_error([&] { redis->get("ac", kHex); }).find(kSecret), std::string::npos);
  if (internal::curl_unavailable("libcurl.so.4").empty()) {
    std::unique_ptr<RemoteStore> http = open_url(refused);
    EXPECT_EQ(http->name(), "http://***@" + refused.substr(refused.find('@') + 1));
    EXPECT_EQ(remote_error([&] { http->get("ac", kHex); }).find(kSecret), std::string::npos);
  }
}

// The rule for a URL kiln cannot read (docs/remote-cache.md): parse() throws InvalidArgument,
// whatever the URL's kind, naming the problem and the URL without its secrets; nothing is
// contacted. (`kiln build` makes that exit 2, the library an InvalidArgument naming the variable.)
TEST(RemoteStore, MalformedUrlIsInvalidArgumentBeforeAnyConnection) {
  for (const char* url : {"redis://cache:port", "http://cache/?q", "cache:6379", "ftp://cache",
                          "redis+unix://", "https://:hunter2-s3cret@"}) {
    std::string message = parse_error(url);
    EXPECT_TRUE(message.starts_with("remote cache URL ")) << message;
    EXPECT_NE(message.find("(the forms: "), std::string::npos) << message;
    EXPECT_EQ(message.find(kSecret), std::string::npos) << message;
  }
}

TEST(RemoteStore, ReadsCredentialsAndCaFiles) {
  TempDirectory dir;
  auto write = [&](const char* name, const char* text) {
    std::ofstream(dir / name) << text;
    return dir / name;
  };
  fs::path token = write("token", "tok3n\n");
  fs::path pair = write("pair", "ci:pa:ss\r\n");
  fs::path empty = write("empty", "\n");

  RemoteStoreOptions a = RemoteStoreOptions::parse("https://cache", token);
  EXPECT_EQ(a.token, "tok3n");
  EXPECT_EQ(a.user, std::nullopt);
  EXPECT_EQ(a.credentials_file, token);
  RemoteStoreOptions b = RemoteStoreOptions::parse("https://cache", pair);
  EXPECT_EQ(b.user, "ci");
  EXPECT_EQ(b.password, "pa:ss");
  RemoteStoreOptions c = RemoteStoreOptions::parse("redis://cache", token);
  EXPECT_EQ(c.password, "tok3n");  // Redis: a secret alone is the password
  EXPECT_EQ(c.token, std::nullopt);
  RemoteStoreOptions d = RemoteStoreOptions::parse("http://ci@cache", token);
  EXPECT_EQ(d.user, "ci");  // the URL's user, the file's password
  EXPECT_EQ(d.password, "tok3n");
  RemoteStoreOptions e = RemoteStoreOptions::parse("redis://:url@cache", pair);
  EXPECT_EQ(e.password, "url");  // the URL's credentials win
  EXPECT_EQ(e.user, std::nullopt);

  EXPECT_THROW(RemoteStoreOptions::parse("https://cache", dir / "absent"), FileNotFound);
  EXPECT_THROW(RemoteStoreOptions::parse("https://cache", empty), InvalidArgument);
  EXPECT_THROW(RemoteStoreOptions::parse("https://cache", {}, dir / "absent.pem"), FileNotFound);
  EXPECT_EQ(RemoteStoreOptions::parse("https://cache", {}, token).ca_file, token);
}

TEST(RemoteStore, RefusesObjectNamesThatAreNotKindAndHex) {
  std::vector<std::unique_ptr<RemoteStore>> stores;
  stores.push_back(open_url("redis://127.0.0.1:1"));
  if (internal::curl_unavailable("libcurl.so.4").empty()) {
    stores.push_back(open_url("http://127.0.0.1:1"));
  }
  for (const std::unique_ptr<RemoteStore>& store : stores) {
    EXPECT_THROW(store->get("../ac", kHex), InvalidArgument);
    EXPECT_THROW(store->get("", kHex), InvalidArgument);
    EXPECT_THROW(store->put("ac", "ABCDEF", "x"), InvalidArgument);  // uppercase
    EXPECT_THROW(store->contains("ac", "12/34"), InvalidArgument);
    EXPECT_THROW(store->remove("ac", ""), InvalidArgument);
  }
}

TEST(RemoteStore, SaysWhatToInstallWithoutLibcurl) {
  std::string message = internal::curl_unavailable("libkiln-no-such-curl.so.4");
  EXPECT_NE(message.find("the HTTP remote cache needs libcurl (libkiln-no-such-curl.so.4: "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("Debian: apt-get install libcurl4)"), std::string::npos) << message;
  if (!internal::curl_unavailable("libcurl.so.4").empty()) {
    GTEST_SKIP() << "libcurl.so.4 is not installed here";
  }
}

// --- Redis ---

class RemoteStoreRedis : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = RedisServer::missing()) GTEST_SKIP() << *why;
  }
};

// The header's example, as written there.
TEST_F(RemoteStoreRedis, HeaderExample) {
  RedisServer redis;
  ASSERT_TRUE(redis.running()) << redis.why();
  std::string hex(kHex);
  std::string bytes = "compiled";
  kiln::RemoteStoreOptions options = kiln::RemoteStoreOptions::parse(redis.url() + "/0");
  std::unique_ptr<kiln::RemoteStore> store = kiln::open_remote_store(options);
  store->put("cas", hex, bytes);
  std::optional<std::string> got = store->get("cas", hex);
  EXPECT_EQ(got, bytes);
  EXPECT_EQ(store->name(), redis.url() + "/0");
}

TEST_F(RemoteStoreRedis, RoundTrips) {
  RedisServer redis;
  ASSERT_TRUE(redis.running()) << redis.why();
  std::unique_ptr<RemoteStore> store = open_url(redis.url());
  check_round_trips(*store);
}

TEST_F(RemoteStoreRedis, ReplyLimits) {
  RedisServer redis;
  ASSERT_TRUE(redis.running()) << redis.why();
  std::unique_ptr<RemoteStore> store = open_url(redis.url());
  check_reply_limits(*store, redis.url());
}

TEST_F(RemoteStoreRedis, PasswordAuth) {
  RedisServer redis({.password = std::string(kSecret)});
  ASSERT_TRUE(redis.running()) << redis.why();
  std::unique_ptr<RemoteStore> store = open_url(redis.url());
  store->put("ac", kHex, "x");
  EXPECT_EQ(store->get("ac", kHex), "x");

  std::string wrong = remote_error([&] { open_url(redis.url_with(":wrong-pw"))->get("ac", kHex); });
  EXPECT_NE(wrong.find("AUTH"), std::string::npos) << wrong;
  EXPECT_EQ(wrong.find("wrong-pw"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find(redis.url_with("***")), std::string::npos) << wrong;
  std::string none = remote_error([&] { open_url(redis.url_with(""))->get("ac", kHex); });
  EXPECT_NE(none.find("NOAUTH"), std::string::npos) << none;
}

TEST_F(RemoteStoreRedis, AclUser) {
  RedisServer redis({.acl_user = "kiln-ci", .acl_password = std::string(kSecret)});
  ASSERT_TRUE(redis.running()) << redis.why();
  std::unique_ptr<RemoteStore> store = open_url(redis.url());
  store->put("ac", kHex, "x");
  EXPECT_TRUE(store->contains("ac", kHex));

  std::string wrong =
      remote_error([&] { open_url(redis.url_with("kiln-ci:not-it"))->get("ac", kHex); });
  EXPECT_NE(wrong.find("WRONGPASS"), std::string::npos) << wrong;
  EXPECT_EQ(wrong.find("not-it"), std::string::npos) << wrong;
}

TEST_F(RemoteStoreRedis, UnixSocketAndDatabases) {
  RedisServer redis({.password = std::string(kSecret), .unix_socket = true});
  ASSERT_TRUE(redis.running()) << redis.why();
  std::unique_ptr<RemoteStore> zero = open_url(redis.url());
  std::unique_ptr<RemoteStore> two = open_url(redis.url() + "?db=2");
  check_round_trips(*zero);
  two->put("ac", kHex, "in db 2");
  EXPECT_EQ(two->get("ac", kHex), "in db 2");
  EXPECT_EQ(zero->get("ac", kHex), std::nullopt);
  std::string bad = remote_error([&] { open_url(redis.url() + "?db=99")->get("ac", kHex); });
  EXPECT_NE(bad.find("SELECT 99"), std::string::npos) << bad;
}

TEST_F(RemoteStoreRedis, ConcurrentUse) {
  RedisServer redis;
  ASSERT_TRUE(redis.running()) << redis.why();
  std::unique_ptr<RemoteStore> store = open_url(redis.url());
  store->put("ac", "5ba7ed", "shared");
  check_concurrent_use(*store);
}

TEST_F(RemoteStoreRedis, IdleConnectionClosedByTheServerIsReplaced) {
  RedisServer redis;
  ASSERT_TRUE(redis.running()) << redis.why();
  std::unique_ptr<RemoteStore> store = open_url(redis.url());
  store->put("ac", kHex, "x");
  std::vector<std::thread> threads;  // several connections, idle in the pool now
  for (int t = 0; t < 4; ++t) threads.emplace_back([&] { store->get("ac", kHex); });
  for (std::thread& thread : threads) thread.join();
  std::string killed = redis.ask("CLIENT KILL TYPE normal");
  EXPECT_TRUE(killed.starts_with(':') && killed != ":0") << killed;
  EXPECT_EQ(store->get("ac", kHex), "x");
  EXPECT_EQ(store->get("ac", kHex), "x");
}

TEST_F(RemoteStoreRedis, ServerGoneIsAnError) {
  RedisServer redis;
  ASSERT_TRUE(redis.running()) << redis.why();
  std::unique_ptr<RemoteStore> store = open_url(redis.url());
  store->put("ac", kHex, "x");
  redis.kill();
  std::string gone = remote_error([&] { store->get("ac", kHex); });
  EXPECT_NE(gone.find(redis.url() + ": "), std::string::npos) << gone;
}

TEST(RemoteStore, RedisConnectionRefusedIsQuick) {
  std::string url = "redis://127.0.0.1:" + std::to_string(testing::unused_loopback_port());
  std::string message;
  double took =
      seconds_of([&] { message = remote_error([&] { open_url(url)->get("ac", kHex); }); });
  EXPECT_LT(took, 1.0);
  EXPECT_NE(message.find("connect"), std::string::npos) << message;
  EXPECT_NE(message.find(url), std::string::npos) << message;
}

TEST(RemoteStore, RedisStallEndsAtTheOperationTimeout) {
  FaultyServer stall(FaultyServer::Mode::stall);
  std::unique_ptr<RemoteStore> store = open_url(stall.url("redis"), 300ms);
  std::string message;
  double took = seconds_of([&] { message = remote_error([&] { store->get("ac", kHex); }); });
  EXPECT_GE(took, 0.25);
  EXPECT_LT(took, 1.5);
  EXPECT_NE(message.find("no answer within 300 ms"), std::string::npos) << message;
}

TEST(RemoteStore, RedisGarbageIsAnError) {
  FaultyServer garbage(FaultyServer::Mode::garbage);
  std::unique_ptr<RemoteStore> store = open_url(garbage.url("redis"), 1000ms);
  std::string message = remote_error([&] { store->get("ac", kHex); });
  EXPECT_NE(message.find("GET kiln:ac:"), std::string::npos) << message;
  EXPECT_NE(message.find("rotocol error"), std::string::npos) << message;
}

// --- HTTP (nginx as WebDAV) ---

class RemoteStoreHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = internal::curl_unavailable("libcurl.so.4"); !why.empty()) {
      GTEST_SKIP() << why;
    }
  }
};

class RemoteStoreWebdav : public RemoteStoreHttp {
 protected:
  void SetUp() override {
    RemoteStoreHttp::SetUp();
    if (IsSkipped()) return;
    if (auto why = WebdavServer::missing()) GTEST_SKIP() << *why;
  }
};

TEST_F(RemoteStoreWebdav, RoundTripsInTheCcacheAndBazelLayout) {
  WebdavServer nginx;
  ASSERT_TRUE(nginx.running()) << nginx.why();
  std::unique_ptr<RemoteStore> store = open_url(nginx.url());
  check_round_trips(*store);
  store->put("cas", kHex, "on disk");
  EXPECT_EQ(testing::read_file(nginx.object_path("cas", kHex)), "on disk");
  std::ofstream(nginx.object_path("ac", "f00d")) << "planted";
  EXPECT_EQ(store->get("ac", "f00d"), "planted");
}

TEST_F(RemoteStoreWebdav, ReplyLimits) {
  WebdavServer nginx;
  ASSERT_TRUE(nginx.running()) << nginx.why();
  std::unique_ptr<RemoteStore> store = open_url(nginx.url());
  check_reply_limits(*store, nginx.url());
}

TEST_F(RemoteStoreWebdav, PathPrefix) {
  WebdavServer nginx;
  ASSERT_TRUE(nginx.running()) << nginx.why();
  std::unique_ptr<RemoteStore> store = open_url(nginx.url() + "/team/kiln/");
  store->put("ac", kHex, "prefixed");
  EXPECT_EQ(testing::read_file(nginx.objects() / "team/kiln/ac" / kHex), "prefixed");
  EXPECT_EQ(store->get("ac", kHex), "prefixed");
}

TEST_F(RemoteStoreWebdav, BasicAuth) {
  WebdavServer nginx({.user = "ci", .password = std::string(kSecret)});
  ASSERT_TRUE(nginx.running()) << nginx.why();
  std::unique_ptr<RemoteStore> store = open_url(nginx.url());
  store->put("ac", kHex, "x");
  EXPECT_EQ(store->get("ac", kHex), "x");
  EXPECT_TRUE(store->contains("ac", kHex));

  std::string wrong =
      remote_error([&] { open_url(nginx.url_with("ci:wrong-pw"))->get("ac", kHex); });
  EXPECT_NE(wrong.find("HTTP 401"), std::string::npos) << wrong;
  EXPECT_EQ(wrong.find("wrong-pw"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find(nginx.url_with("***")), std::string::npos) << wrong;
  std::string none = remote_error([&] { open_url(nginx.url_with(""))->put("ac", kHex, "y"); });
  EXPECT_NE(none.find("PUT ac/"), std::string::npos) << none;
  EXPECT_NE(none.find("HTTP 401"), std::string::npos) << none;

  TempDirectory dir;
  std::ofstream(dir / "credentials") << "ci:" << kSecret << "\n";
  RemoteStoreOptions from_file = RemoteStoreOptions::parse(nginx.url_with(""), dir / "credentials");
  EXPECT_EQ(open_remote_store(from_file)->get("ac", kHex), "x");
}

TEST_F(RemoteStoreWebdav, ConcurrentUse) {
  WebdavServer nginx;
  ASSERT_TRUE(nginx.running()) << nginx.why();
  std::unique_ptr<RemoteStore> store = open_url(nginx.url());
  store->put("ac", "5ba7ed", "shared");
  check_concurrent_use(*store);
}

TEST_F(RemoteStoreHttp, ConnectionRefusedIsQuick) {
  std::string url = "http://127.0.0.1:" + std::to_string(testing::unused_loopback_port());
  std::string message;
  double took =
      seconds_of([&] { message = remote_error([&] { open_url(url)->get("ac", kHex); }); });
  EXPECT_LT(took, 1.0);
  EXPECT_NE(message.find(url + ": GET ac/"), std::string::npos) << message;
}

TEST_F(RemoteStoreHttp, StallEndsAtTheOperationTimeout) {
  FaultyServer stall(FaultyServer::Mode::stall);
  std::unique_ptr<RemoteStore> store = open_url(stall.url("http"), 300ms);
  for (const auto& operation : std::vector<std::function<void()>>{
           [&] { store->get("ac", kHex); }, [&] { store->put("ac", kHex, binary_bytes(1 << 20)); },
           [&] { store->contains("ac", kHex); }}) {
    std::string message;
    double took = seconds_of([&] { message = remote_error(operation); });
    EXPECT_GE(took, 0.25);
    EXPECT_LT(took, 1.5);
    EXPECT_NE(message.find("imed out"), std::string::npos) << message;
  }
}

TEST_F(RemoteStoreHttp, ServerErrorIsAnError) {
  FaultyServer server(FaultyServer::Mode::http_500);
  std::unique_ptr<RemoteStore> store = open_url(server.url("http"));
  std::string message = remote_error([&] { store->get("ac", kHex); });
  EXPECT_NE(message.find("HTTP 500"), std::string::npos) << message;
  EXPECT_NE(remote_error([&] { store->contains("ac", kHex); }).find("HTTP 500"), std::string::npos);
  remote_error([&] { store->put("ac", kHex, "x"); });
}

TEST_F(RemoteStoreHttp, GarbageIsAnError) {
  FaultyServer garbage(FaultyServer::Mode::garbage);
  std::unique_ptr<RemoteStore> store = open_url(garbage.url("http"));
  std::string message = remote_error([&] { store->get("ac", kHex); });
  EXPECT_NE(message.find(garbage.url("http") + ": GET ac/"), std::string::npos) << message;
}

// --- Replies that never end or never stop ---

// The growth of this process's peak resident size while `fn` runs, in MiB.
double peak_growth_mib(const std::function<void()>& fn) {
  auto peak_kib = [] {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss);
  };
  double before = peak_kib();
  fn();
  return (peak_kib() - before) / 1024;
}

// Runs `operation` on a store of `server`'s with a 500 ms limit on each operation: it must fail
// with a RemoteStoreError within the limit and a second, with the peak memory kept small.
std::string bounded_failure(FaultyServer& server, std::string_view scheme,
                            const std::function<void(RemoteStore&)>& operation) {
  std::unique_ptr<RemoteStore> store = open_url(server.url(scheme), 500ms);
  std::string message;
  double took = 0;
  double growth = peak_growth_mib(
      [&] { took = seconds_of([&] { message = remote_error([&] { operation(*store); }); }); });
  EXPECT_LT(took, 1.5) << message;
  EXPECT_LT(growth, 100) << message;
  EXPECT_NE(message.find(server.url(scheme) + ": "), std::string::npos) << message;
  return message;
}

TEST(RemoteStore, RedisTrickleBoundedByDeadline) {
  // A byte every 100 ms: each read(2) is quick, only the whole reply is late.
  FaultyServer trickle(FaultyServer::Mode::redis_trickle, 100ms);
  std::string message =
      bounded_failure(trickle, "redis", [](RemoteStore& store) { store.get("cas", kHex); });
  EXPECT_NE(message.find("no answer within 500 ms"), std::string::npos) << message;
}

TEST(RemoteStore, RedisFloodRefusedAtItsLength) {
  FaultyServer flood(FaultyServer::Mode::redis_flood);
  std::string message =
      bounded_failure(flood, "redis", [](RemoteStore& store) { store.get("ac", kHex); });
  EXPECT_NE(message.find("GET kiln:ac:" + std::string(kHex)), std::string::npos) << message;
  EXPECT_NE(message.find("reply of 400000000 bytes exceeds the 65536-byte limit for an action "
                         "entry"),
            std::string::npos)
      << message;
  EXPECT_LT(flood.bytes_sent(), 64 << 20);
}

TEST_F(RemoteStoreHttp, TrickleBoundedByDeadline) {
  FaultyServer trickle(FaultyServer::Mode::http_trickle, 100ms);
  std::string message =
      bounded_failure(trickle, "http", [](RemoteStore& store) { store.get("cas", kHex); });
  EXPECT_NE(message.find("imed out"), std::string::npos) << message;
}

TEST_F(RemoteStoreHttp, FloodRefusedAtItsContentLength) {
  FaultyServer flood(FaultyServer::Mode::http_flood);
  std::string message =
      bounded_failure(flood, "http", [](RemoteStore& store) { store.get("ac", kHex); });
  EXPECT_NE(message.find("GET ac/" + std::string(kHex)), std::string::npos) << message;
  EXPECT_NE(message.find("reply of 900000000 bytes exceeds the 65536-byte limit for an action "
                         "entry"),
            std::string::npos)
      << message;
  EXPECT_LT(flood.bytes_sent(), 64 << 20);
}

TEST_F(RemoteStoreHttp, ChunkedFloodRefusedOnceOverTheLimit) {
  FaultyServer flood(FaultyServer::Mode::http_chunked_flood);
  std::string message =
      bounded_failure(flood, "http", [](RemoteStore& store) { store.get("ac", kHex); });
  EXPECT_NE(message.find("exceeds the 65536-byte limit for an action entry"), std::string::npos)
      << message;
  EXPECT_LT(flood.bytes_sent(), 64 << 20);
}

// --- A DNS server that never answers ---

constexpr std::string_view kUnresolvable = "remote-cache.kiln-black-hole.example";

// Run only by RemoteStore.DnsBlackHoleCostsOneConnectLimit, inside a network namespace whose
// /etc/resolv.conf names 127.0.0.1: it is the black hole itself (a UDP socket on port 53 that
// receives the queries and never answers), and asks a store of each kind for an object of the
// unresolvable host, once, then from 24 threads at once, then once more.
TEST(RemoteStore, DISABLED_DnsBlackHoleInside) {
  if (std::getenv("KILN_TEST_DNS_BLACK_HOLE") == nullptr) GTEST_SKIP() << "run by the test below";
  internal::UniqueFd hole(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(53);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(hole.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0)
      << std::strerror(errno);
  std::vector<std::string> schemes = {"redis"};
  if (internal::curl_unavailable("libcurl.so.4").empty()) schemes.emplace_back("http");
  for (const std::string& scheme : schemes) {
    std::string url = fmt::format("{}://{}:6379", scheme, kUnresolvable);
    std::unique_ptr<RemoteStore> store = open_url(url, 2000ms);  // connecting: 1000 ms
    std::string message;
    double first = seconds_of([&] { message = remote_error([&] { store->get("ac", kHex); }); });
    double crowd = seconds_of([&] {
      std::vector<std::thread> threads;
      for (int i = 0; i < 24; ++i) {
        threads.emplace_back([&] {
          try {
            store->get("ac", kHex);
          } catch (const RemoteStoreError&) {
          }
        });
      }
      for (std::thread& thread : threads) thread.join();
    });
    double again = seconds_of([&] { remote_error([&] { store->get("ac", kHex); }); });
    double closing = seconds_of([&] { store.reset(); });
    std::printf("%s: first lookup %.2f s, 24 threads %.2f s, again %.3f s, closing %.3f s: %s\n",
                scheme.c_str(), first, crowd, again, closing, message.c_str());
    EXPECT_LT(first, 2.0) << message;
    EXPECT_LT(crowd + again + closing, 1.0);
    EXPECT_NE(message.find(url + ": "), std::string::npos) << message;
    EXPECT_NE(message.find(std::string(kUnresolvable)), std::string::npos) << message;
  }
  char query[512];
  int queries = 0;
  while (::recv(hole.get(), query, sizeof query, 0) > 0) ++queries;
  EXPECT_GT(queries, 0) << "the resolver never asked the black hole";
}

TEST(RemoteStore, DnsBlackHoleCostsOneConnectLimit) {
  testing::NamespaceNetwork net(1);
  if (!net.available()) GTEST_SKIP() << net.why();
  // `ip netns exec` mounts /etc/netns/<name>/resolv.conf over /etc/resolv.conf for the program.
  fs::path etc = fs::path("/etc/netns") / net.name(0);
  fs::create_directories(etc);
  std::ofstream(etc / "resolv.conf") << "nameserver 127.0.0.1\noptions timeout:5 attempts:2\n";
  std::vector<std::string> argv = net.exec_prefix(0);
  argv.insert(argv.end(), {fs::read_symlink("/proc/self/exe").string(),
                           "--gtest_filter=RemoteStore.DISABLED_DnsBlackHoleInside",
                           "--gtest_also_run_disabled_tests"});
  RunResult result =
      run({.argv = argv, .env = {{"KILN_TEST_DNS_BLACK_HOLE", "1"}}, .timeout = 120s});
  fs::remove_all(etc);
  std::printf("%s", result.output.c_str());
  EXPECT_TRUE(result.ok()) << result.status_text() << "\n" << result.output;
  EXPECT_NE(result.output.find("[  PASSED  ] 1 test"), std::string::npos) << result.output;
}

// Not run by default: the median time of a small GET on loopback, for the report.
//   kiln_unit_tests --gtest_also_run_disabled_tests --gtest_filter='*SmallGetLatency*'
TEST(RemoteStore, DISABLED_SmallGetLatency) {
  auto median_us = [](RemoteStore& store) {
    store.put("ac", kHex, std::string(100, 'x'));
    std::vector<double> times;
    for (int i = 0; i < 200; ++i) {
      times.push_back(seconds_of([&] { store.get("ac", kHex); }) * 1e6);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  if (!RedisServer::missing()) {
    RedisServer redis;
    ASSERT_TRUE(redis.running()) << redis.why();
    std::printf("redis: median small GET %.0f us\n", median_us(*open_url(redis.url())));
    RedisServer unix_redis({.unix_socket = true});
    ASSERT_TRUE(unix_redis.running()) << unix_redis.why();
    std::printf("redis (unix socket): median small GET %.0f us\n",
                median_us(*open_url(unix_redis.url())));
  }
  if (!WebdavServer::missing() && internal::curl_unavailable("libcurl.so.4").empty()) {
    WebdavServer nginx;
    ASSERT_TRUE(nginx.running()) << nginx.why();
    std::printf("nginx: median small GET %.0f us\n", median_us(*open_url(nginx.url())));
  }
}

}  // namespace
}  // namespace kiln
