// The cache's remote level against real servers (redis-server, nginx as WebDAV) and ones that
// misbehave: shared between two machines' caches, verified, read-only by default, and never a
// failure of the caller, whatever the server does.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "internal/files.h"
#include "internal/remote_level.h"
#include "internal/sha256.h"
#include "kiln/cache.h"
#include "kiln/remote_store.h"
#include "kiln/settings.h"
#include "kiln/temp_directory.h"
#include "testing/cache_servers.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::FaultyServer;
using testing::RedisServer;
using testing::WebdavServer;
using Clock = std::chrono::steady_clock;

// One "machine": its own cache directory and checkout, on a shared server.
Cache machine(const fs::path& root, const std::string& name, const std::string& url,
              bool read_write, std::chrono::milliseconds timeout = std::chrono::seconds(2)) {
  return Cache::open(
      {.directory = root / name / "cache",
       .enabled = true,
       .remote =
           RemoteCacheOptions{.url = url, .read_write = read_write, .operation_timeout = timeout},
       .base_directory = root / name / "checkout"});
}

enum class Server { redis, webdav };

class RemoteCacheOnServer : public ::testing::TestWithParam<Server> {
 protected:
  void SetUp() override {
    if (GetParam() == Server::redis) {
      if (auto why = RedisServer::missing()) GTEST_SKIP() << *why;
      redis_ = std::make_unique<RedisServer>(RedisServer::Options{});
      ASSERT_TRUE(redis_->running()) << redis_->why();
      url_ = redis_->url();
    } else {
      if (auto why = WebdavServer::missing()) GTEST_SKIP() << *why;
      webdav_ = std::make_unique<WebdavServer>(WebdavServer::Options{});
      ASSERT_TRUE(webdav_->running()) << webdav_->why();
      url_ = webdav_->url();
    }
    store_ = open_remote_store(RemoteStoreOptions::parse(url_));
  }

  // Whether the server holds the entry stored under `key` (its action entry).
  bool holds(const std::string& key) {
    return store_->contains("ac", internal::remote_action_name(key));
  }

  std::string cas_name(std::string_view payload_bytes) {
    // What Cache stores for an unpinned entry: an empty pin line, then the bytes.
    return internal::sha256_hex("\n" + std::string(payload_bytes));
  }

  TempDirectory dir_;
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<WebdavServer> webdav_;
  std::string url_;
  std::unique_ptr<RemoteStore> store_;
};

TEST_P(RemoteCacheOnServer, ACompileOnOneMachineIsAHitOnAnother) {
  Cache ci = machine(dir_.path(), "ci", url_, true);
  Cache dev = machine(dir_.path(), "dev", url_, false);
  std::string key = cache_key({"kernel", "-O3"});
  std::string bytes(
      "\x7f"
      "ELF\0cubin",
      10);
  EXPECT_FALSE(dev.get(key));
  ci.put(key, bytes);
  EXPECT_TRUE(holds(key));
  CacheOrigin origin = CacheOrigin::none;
  EXPECT_EQ(dev.get(key, &origin), bytes);
  EXPECT_EQ(origin, CacheOrigin::remote);
  // Written to the local level: the next lookup does not ask the server.
  EXPECT_EQ(dev.get(key, &origin), bytes);
  EXPECT_EQ(origin, CacheOrigin::local);
  RemoteCounters counters = dev.remote_counters();
  EXPECT_EQ(counters.hits, 1u);
  EXPECT_EQ(counters.misses, 1u);
  EXPECT_EQ(counters.errors, 0u);
  EXPECT_GT(counters.bytes_down, bytes.size());
  EXPECT_NE(dev.remote_description().find("(read-only)"), std::string::npos);
}

TEST_P(RemoteCacheOnServer, ReadOnlyUploadsNothing) {
  Cache dev = machine(dir_.path(), "dev", url_, false);
  std::string key = cache_key({"kernel"});
  dev.put(key, "bytes");
  EXPECT_EQ(dev.get(key), "bytes");  // locally, as ever
  EXPECT_FALSE(holds(key));
  EXPECT_FALSE(store_->contains("cas", cas_name("bytes")));
  EXPECT_EQ(dev.remote_counters().uploads, 0u);
}

TEST_P(RemoteCacheOnServer, ACorruptTruncatedOrSubstitutedObjectIsNeverServed) {
  Cache ci = machine(dir_.path(), "ci", url_, true);
  std::vector<std::string> keys, contents;
  for (int i = 0; i < 4; ++i) {
    keys.push_back(cache_key({"kernel", std::to_string(i)}));
    contents.push_back(std::string(1000, static_cast<char>('a' + i)));
    ci.put(keys.back(), contents.back());
  }
  // 0: a flipped byte; 1: cut short; 2: another object's bytes of the same size under its name;
  // 3: an action entry that is not one.
  std::string flipped = "\n" + contents[0];
  flipped[500] ^= 0x20;
  store_->put("cas", cas_name(contents[0]), flipped);
  store_->put("cas", cas_name(contents[1]), ("\n" + contents[1]).substr(0, 400));
  store_->put("cas", cas_name(contents[2]), "\n" + contents[3]);
  store_->put("ac", internal::remote_action_name(keys[3]), "not an action entry\n");
  Cache dev = machine(dir_.path(), "dev", url_, false);
  for (const std::string& key : keys) {
    CacheOrigin origin = CacheOrigin::local;
    EXPECT_EQ(dev.get(key, &origin), std::nullopt);
    EXPECT_EQ(origin, CacheOrigin::none);
  }
  RemoteCounters counters = dev.remote_counters();
  EXPECT_EQ(counters.rejected, 4u);
  EXPECT_EQ(counters.hits, 0u);
  EXPECT_EQ(counters.errors, 0u);  // the server answered: nothing wrong with it
  // Nothing of it reached the local level either.
  EXPECT_EQ(dev.stats().entries, 0u);
}

TEST_P(RemoteCacheOnServer, AServerThatDiesIsSurvivedAndGivenUpOn) {
  Cache ci = machine(dir_.path(), "ci", url_, true, std::chrono::milliseconds(500));
  std::string key = cache_key({"before"});
  ci.put(key, "made before it died");
  if (redis_) redis_->kill();
  if (webdav_) webdav_->kill();
  Cache dev = machine(dir_.path(), "dev", url_, true, std::chrono::milliseconds(500));
  RemoteCounters before = dev.remote_counters();  // the process's, shared with `ci`
  auto start = Clock::now();
  for (int i = 0; i < 20; ++i) {
    std::string k = cache_key({"after", std::to_string(i)});
    EXPECT_EQ(dev.get(k), std::nullopt);
    dev.put(k, "compiled locally");
    EXPECT_EQ(dev.get(k), "compiled locally");
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  RemoteCounters counters = dev.remote_counters();
  EXPECT_EQ(counters.errors - before.errors, 3u);  // then not asked again
  EXPECT_EQ(counters.uploads - before.uploads, 0u);
}

TEST_P(RemoteCacheOnServer, AnEntryOverTheSizeLimitIsNotUploaded) {
  Cache ci = Cache::open(
      {.directory = dir_.path() / "ci",
       .enabled = true,
       .remote = RemoteCacheOptions{.url = url_, .read_write = true, .max_object_bytes = 100},
       .base_directory = dir_.path()});
  std::string small = cache_key({"small"});
  std::string large = cache_key({"large"});
  ci.put(small, std::string(50, 's'));
  ci.put(large, std::string(1000, 'l'));
  EXPECT_TRUE(holds(small));
  EXPECT_FALSE(holds(large));
  EXPECT_FALSE(store_->contains("cas", cas_name(std::string(1000, 'l'))));
  EXPECT_EQ(ci.get(large), std::string(1000, 'l'));  // kept locally all the same
}

INSTANTIATE_TEST_SUITE_P(Servers, RemoteCacheOnServer,
                         ::testing::Values(Server::redis, Server::webdav), [](const auto& info) {
                           return std::string(info.param == Server::redis ? "Redis" : "Webdav");
                         });

TEST(RemoteCacheFaults, MisbehavingServersCostBoundedTimeAndFailNothing) {
  struct Case {
    FaultyServer::Mode mode;
    const char* scheme;
  };
  for (const Case& c :
       {Case{FaultyServer::Mode::stall, "http"}, Case{FaultyServer::Mode::stall, "redis"},
        Case{FaultyServer::Mode::http_500, "http"}, Case{FaultyServer::Mode::garbage, "http"},
        Case{FaultyServer::Mode::garbage, "redis"}}) {
    SCOPED_TRACE(c.scheme + std::string(" mode ") + std::to_string(static_cast<int>(c.mode)));
    FaultyServer server(c.mode);
    TempDirectory dir;
    Cache cache =
        machine(dir.path(), "m", server.url(c.scheme), true, std::chrono::milliseconds(300));
    auto start = Clock::now();
    for (int i = 0; i < 10; ++i) {
      std::string key = cache_key({"k", std::to_string(i)});
      EXPECT_EQ(cache.get(key), std::nullopt);
      cache.put(key, "local bytes");
      EXPECT_EQ(cache.get(key), "local bytes");
    }
    // Three operation limits at most, then the server is not asked again.
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
    EXPECT_EQ(cache.remote_counters().errors, 3u);
    EXPECT_EQ(cache.remote_counters().hits, 0u);
  }
}

TEST(RemoteCacheFaults, NothingListeningAndWrongCredentialsAreWarningsNotFailures) {
  TempDirectory dir;
  Cache refused =
      machine(dir.path(), "a",
              "redis://127.0.0.1:" + std::to_string(testing::unused_loopback_port()), false);
  EXPECT_EQ(refused.get(cache_key({"k"})), std::nullopt);
  EXPECT_EQ(refused.remote_counters().errors, 1u);
  if (auto why = RedisServer::missing()) GTEST_SKIP() << *why;
  RedisServer redis({.password = "right"});
  ASSERT_TRUE(redis.running()) << redis.why();
  Cache wrong = machine(dir.path(), "b", redis.url_with(":wrong"), true);
  wrong.put(cache_key({"k"}), "bytes");
  EXPECT_EQ(wrong.get(cache_key({"k"})), "bytes");
  EXPECT_GE(wrong.remote_counters().errors, 1u);
  EXPECT_EQ(wrong.remote_counters().uploads, 0u);
}

TEST(RemoteCacheOptions, TheEnvironmentConfiguresItAndBadValuesAreNamed) {
  {
    testing::ScopedEnv none("KILN_REMOTE_CACHE", std::nullopt);
    EXPECT_FALSE(RemoteCacheOptions::from_environment().has_value());
  }
  testing::ScopedEnv url("KILN_REMOTE_CACHE", "redis://cache:6379/2");
  testing::ScopedEnv timeout("KILN_REMOTE_CACHE_TIMEOUT", "0.5");
  {
    testing::ScopedEnv mode("KILN_REMOTE_CACHE_MODE", std::nullopt);
    std::optional<RemoteCacheOptions> options = RemoteCacheOptions::from_environment();
    ASSERT_TRUE(options.has_value());
    EXPECT_EQ(options->url, "redis://cache:6379/2");
    EXPECT_FALSE(options->read_write);  // read-only unless asked
    EXPECT_EQ(options->operation_timeout, std::chrono::milliseconds(500));
  }
  {
    testing::ScopedEnv mode("KILN_REMOTE_CACHE_MODE", "read-write");
    EXPECT_TRUE(RemoteCacheOptions::from_environment()->read_write);
  }
  testing::ScopedEnv mode("KILN_REMOTE_CACHE_MODE", "write-only");
  try {
    (void)RemoteCacheOptions::from_environment();
    FAIL() << "a mode it cannot read was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("write-only"), std::string::npos) << e.what();
  }
}

// One default for the remote operation limit: the settings table's, which the options' own
// defaults (for callers that fill them in themselves) repeat.
TEST(RemoteCacheOptions, TheOperationLimitHasOneDefault) {
  testing::ScopedEnv unset("KILN_REMOTE_CACHE_TIMEOUT", std::nullopt);
  std::optional<std::chrono::milliseconds> table = settings::seconds("KILN_REMOTE_CACHE_TIMEOUT");
  ASSERT_TRUE(table.has_value());
  EXPECT_EQ(RemoteCacheOptions{}.operation_timeout, *table);
  EXPECT_EQ(RemoteStoreOptions{}.operation_timeout, *table);
  testing::ScopedEnv url("KILN_REMOTE_CACHE", "redis://cache:6379/2");
  EXPECT_EQ(RemoteCacheOptions::from_environment()->operation_timeout, *table);
}

// One rule for a URL kiln cannot read, in the library as in the CLI (docs/remote-cache.md): an
// InvalidArgument naming the variable, from from_environment() and from Cache::open(), never a
// warning that leaves a tuning run without its shared cache unnoticed.
TEST(RemoteCacheOptions, AMalformedUrlIsAnErrorNamingTheVariable) {
  TempDirectory dir;
  for (const char* bad : {"ftp://cache.example/kiln", "redis://cache:port/0"}) {
    SCOPED_TRACE(bad);
    testing::ScopedEnv url("KILN_REMOTE_CACHE", bad);
    try {
      (void)RemoteCacheOptions::from_environment();
      ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_TRUE(std::string(e.what()).starts_with("KILN_REMOTE_CACHE: ")) << e.what();
    }
    EXPECT_THROW(Cache::open({.directory = dir.path() / "cache", .enabled = true}),
                 InvalidArgument);
    EXPECT_THROW(Cache::open({.directory = dir.path() / "cache",
                              .enabled = true,
                              .remote = RemoteCacheOptions{.url = bad}}),
                 InvalidArgument);
  }
}

}  // namespace
}  // namespace kiln
