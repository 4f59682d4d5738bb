// Keys that travel between checkouts (Cache::relocated, DirectCache's header lists), entries
// pinned to the checkout their bytes name, tools known by content, and the lookup counters.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "internal/files.h"
#include "kiln/cache.h"
#include "kiln/direct_cache.h"
#include "kiln/temp_directory.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

Cache open_at(const fs::path& dir, const fs::path& base) {
  return Cache::open({.directory = dir,
                      .enabled = true,
                      .remote = RemoteCacheOptions{},  // none, whatever the environment says
                      .base_directory = base});
}

TEST(CacheRelocation, TheBaseIsReplacedOnlyAsAWholePath) {
  TempDirectory dir;
  fs::path base = dir / "alice" / "proj";
  Cache cache = open_at(dir / "cache", base);
  std::string b = base.string();
  EXPECT_EQ(cache.base_directory(), base);
  EXPECT_EQ(cache.relocated(b + "/src/a.c"), "$BASE/src/a.c");
  EXPECT_EQ(cache.relocated(b), "$BASE");
  EXPECT_EQ(cache.relocated("-I" + b + "/include"), "-I$BASE/include");
  EXPECT_EQ(cache.relocated("-isystem" + b + "/sys"), "-isystem$BASE/sys");
  EXPECT_EQ(cache.relocated("CPATH=" + b + "/a:" + b + "/b"), "CPATH=$BASE/a:$BASE/b");
  EXPECT_EQ(cache.relocated(std::string("x\0", 2) + b + "/x.c"),
            std::string("x\0", 2) + "$BASE/x.c");
  // Other paths that merely contain it, or start like it, are other directories.
  EXPECT_EQ(cache.relocated(b + "2/a.c"), b + "2/a.c");
  EXPECT_EQ(cache.relocated(b + "-old/a.c"), b + "-old/a.c");
  EXPECT_EQ(cache.relocated("/mnt" + b + "/a.c"), "/mnt" + b + "/a.c");
  EXPECT_EQ(cache.resolved("$BASE/src/a.c"), base / "src/a.c");
  EXPECT_EQ(cache.resolved("$BASE"), base);
  EXPECT_EQ(cache.resolved("/usr/include/stdio.h"), fs::path("/usr/include/stdio.h"));
  // The root relocates nothing.
  EXPECT_EQ(open_at(dir / "cache", "/").relocated("/usr/include"), "/usr/include");
}

// A '$' of the text is doubled, so that "$BASE" written by the user is not the base directory;
// resolved() undoes both.
TEST(CacheRelocation, ALiteralDollarIsEscapedAndResolvedBack) {
  TempDirectory dir;
  fs::path base = dir / "proj";
  Cache cache = open_at(dir / "cache", base);
  std::string b = base.string();
  EXPECT_EQ(cache.relocated("-DWHERE=\"$BASE/data\""), "-DWHERE=\"$$BASE/data\"");
  EXPECT_EQ(cache.relocated("-DWHERE=\"" + b + "/data\""), "-DWHERE=\"$BASE/data\"");
  EXPECT_EQ(cache.relocated("a$b$$c"), "a$$b$$$$c");
  EXPECT_EQ(cache.relocated(b + "/$x/h.h"), "$BASE/$$x/h.h");
  EXPECT_EQ(cache.resolved("$BASE/$$x/h.h"), base / "$x/h.h");
  EXPECT_EQ(cache.resolved("$$BASE/h.h"), fs::path("$BASE/h.h"));
  EXPECT_EQ(cache.resolved(cache.relocated("/usr/include/$x.h")), fs::path("/usr/include/$x.h"));
  // Escaped without a base too.
  EXPECT_EQ(open_at(dir / "cache", "/").relocated("$BASE"), "$$BASE");
}

TEST(CacheRelocation, TwoCheckoutsShareAnEntryUnlessItsBytesNameTheCheckout) {
  TempDirectory dir;
  fs::path alice = dir / "alice" / "proj";
  fs::path bob = dir / "bob" / "work" / "proj";
  Cache at_alice = open_at(dir / "cache", alice);
  Cache at_bob = open_at(dir / "cache", bob);
  std::string shared_key = cache_key({at_alice.relocated((alice / "a.c").string())});
  EXPECT_EQ(shared_key, cache_key({at_bob.relocated((bob / "a.c").string())}));
  at_alice.put(shared_key, "object code");
  CacheOrigin origin = CacheOrigin::none;
  EXPECT_EQ(at_bob.get(shared_key, &origin), "object code");
  EXPECT_EQ(origin, CacheOrigin::local);

  // An output that names Alice's checkout (__FILE__, debug information) is hers alone.
  std::string pinned_key = cache_key({"assert.c"});
  std::string pinned = "assertion failed at " + (alice / "assert.c").string();
  at_alice.put(pinned_key, pinned);
  EXPECT_EQ(at_alice.get(pinned_key), pinned);
  EXPECT_EQ(at_bob.get(pinned_key, &origin), std::nullopt);
  EXPECT_EQ(origin, CacheOrigin::none);
  // Bob compiles and stores his own; then Alice misses, and neither is ever served the other's.
  std::string bobs = "assertion failed at " + (bob / "assert.c").string();
  at_bob.put(pinned_key, bobs);
  EXPECT_EQ(at_bob.get(pinned_key), bobs);
  EXPECT_EQ(at_alice.get(pinned_key), std::nullopt);
}

TEST(CacheRelocation, HeadersUnderTheBaseAreCheckedInTheCheckoutThatLooksUp) {
  TempDirectory dir;
  fs::path alice = dir / "alice" / "proj";
  fs::path bob = dir / "bob" / "proj";
  for (const fs::path& base : {alice, bob}) {
    fs::create_directories(base / "include");
    internal::write_file(base / "include" / "k.h", "#define K 1\n");
    internal::write_file(base / "k.c", "#include \"k.h\"\n");
  }
  Cache at_alice = open_at(dir / "cache", alice);
  Cache at_bob = open_at(dir / "cache", bob);
  std::string key = cache_key({"kernel", content_key("#include \"k.h\"\n")});
  // A header changed in the tick the compile starts is not stored (it may have changed during
  // it): let the kernel's coarse clock move on.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  DirectCache made(at_alice, key, {alice / "k.c"});
  ASSERT_TRUE(made.put({alice / "include" / "k.h", "/usr/include/stdio.h"}, "object"));
  CacheOrigin origin = CacheOrigin::none;
  EXPECT_EQ(DirectCache(at_bob, key, {bob / "k.c"}).get(&origin), "object");
  EXPECT_EQ(origin, CacheOrigin::local);
  // Bob's header differs from Alice's: a miss in his checkout, still a hit in hers.
  internal::write_file(bob / "include" / "k.h", "#define K 2\n");
  EXPECT_EQ(DirectCache(at_bob, key, {bob / "k.c"}).get(&origin), std::nullopt);
  EXPECT_EQ(origin, CacheOrigin::none);
  EXPECT_EQ(DirectCache(at_alice, key, {alice / "k.c"}).get(), "object");
}

TEST(CacheRelocation, AToolIsKnownByItsContentWhereverItLies) {
  TempDirectory dir;
  internal::write_file(dir / "gcc-a", "the same compiler");
  fs::create_directories(dir / "elsewhere");
  internal::write_file(dir / "elsewhere" / "gcc-b", "the same compiler");
  internal::write_file(dir / "gcc-c", "a rebuilt compiler");
  Cache memo = open_at(dir / "cache", dir.path());
  std::string a = file_content_identity(dir / "gcc-a", &memo);
  EXPECT_TRUE(a.starts_with("content:")) << a;
  EXPECT_EQ(a, file_content_identity(dir / "elsewhere" / "gcc-b"));
  EXPECT_NE(a, file_content_identity(dir / "gcc-c"));
  EXPECT_EQ(file_content_identity(dir / "absent"), "");
  // Rewritten in place: another tool, though the path is the same.
  internal::write_file(dir / "gcc-a", "an upgraded compiler");
  EXPECT_NE(file_content_identity(dir / "gcc-a", &memo), a);
}

TEST(CacheCounters, EveryProcessLookupsAreCountedUntilCleared) {
  TempDirectory dir;
  {
    Cache cache = open_at(dir / "cache", dir.path());
    std::string key = cache_key({"counted"});
    EXPECT_FALSE(cache.get(key));
    cache.put(key, "bytes");
    EXPECT_TRUE(cache.get(key));
    EXPECT_TRUE(cache.get(key));
  }  // the last copy adds its counts to the directory's
  Cache again = open_at(dir / "cache", dir.path());
  Cache::Stats stats = again.stats();
  EXPECT_EQ(stats.local_hits, 2u);
  EXPECT_EQ(stats.local_misses, 1u);
  EXPECT_EQ(stats.remote.hits, 0u);
  EXPECT_EQ(again.remote_description(), "");
  again.clear();
  EXPECT_EQ(again.stats().local_hits, 0u);
}

}  // namespace
}  // namespace kiln
