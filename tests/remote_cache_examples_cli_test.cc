// The bundled examples on a shared cache: two copies of examples/ at different paths, each with
// its own local cache, one Redis. The second copy gets every job from the server but the one
// whose output names its checkout (LLVM IR's source_filename), which it compiles: an output that
// names the first checkout's path is never served to the second.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "internal/files.h"
#include "kiln/temp_directory.h"
#include "testing/cache_servers.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::kiln_cli;
using testing::RedisServer;

struct Checkout {
  fs::path root;
  std::map<std::string, json> jobs;  // by name, from --json
  RunResult result;
};

Checkout build(const fs::path& root, const std::string& url, bool read_write) {
  Checkout c{.root = root, .jobs = {}, .result = {}};
  c.result = kiln_cli({"build", (root / "examples" / "kiln.json").string(), "--out",
                       (root / "out").string(), "--json", (root / "result.json").string()},
                      {{"KILN_CACHE_DIR", (root / "cache").string()},
                       {"KILN_NO_CACHE", std::nullopt},
                       {"KILN_BASE_DIR", std::nullopt},
                       {"KILN_REMOTE_CACHE", url},
                       {"KILN_REMOTE_CACHE_MODE", read_write ? "read-write" : "read-only"}});
  if (c.result.exit_code == 0) {
    json report = json::parse(internal::read_file(root / "result.json"));
    for (const json& job : report["jobs"]) {
      c.jobs[job["name"].get<std::string>()] = job;
    }
  }
  return c;
}

TEST(RemoteCacheExamplesCli, ASecondCheckoutGetsEveryExampleButTheOneNamingTheFirst) {
  if (auto why = RedisServer::missing()) GTEST_SKIP() << *why;
  RedisServer redis(RedisServer::Options{});
  ASSERT_TRUE(redis.running()) << redis.why();
  TempDirectory dir;
  fs::path alice = dir / "alice";
  fs::path bob = dir / "bob" / "elsewhere";
  for (const fs::path& root : {alice, bob}) {
    fs::create_directories(root);
    fs::copy(fs::path(KILN_SOURCE_DIR) / "examples", root / "examples",
             fs::copy_options::recursive);
  }
  Checkout a = build(alice, redis.url(), true);
  ASSERT_EQ(a.result.exit_code, 0) << a.result.output << a.result.error_output;
  Checkout b = build(bob, redis.url(), false);
  ASSERT_EQ(b.result.exit_code, 0) << b.result.output << b.result.error_output;
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  int served = 0;
  for (const auto& [name, job] : b.jobs) {
    SCOPED_TRACE(name);
    if (job["status"] == "skipped") continue;  // a toolchain this machine lacks, on both
    ASSERT_EQ(a.jobs[name]["ran"], "local");
    std::string alices = internal::read_file(a.jobs[name]["output"].get<std::string>());
    std::string bobs = internal::read_file(job["output"].get<std::string>());
    if (alices.find(alice.string()) != std::string::npos) {
      // Names Alice's checkout (add.ll's source_filename): compiled again, naming Bob's.
      EXPECT_EQ(job["ran"], "local");
      EXPECT_NE(bobs.find(bob.string()), std::string::npos);
      EXPECT_EQ(bobs.find(alice.string()), std::string::npos);
    } else {
      EXPECT_EQ(job["ran"], "remote-cache");
      EXPECT_EQ(bobs, alices);
      ++served;
    }
  }
  EXPECT_GE(served, 10);
  EXPECT_EQ(a.result.error_output.find("remote cache"), std::string::npos) << a.result.error_output;
  EXPECT_EQ(b.result.error_output.find("remote cache"), std::string::npos) << b.result.error_output;
}

}  // namespace
}  // namespace kiln
