#include "kiln/cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "internal/files.h"
#include "kiln/error.h"
#include "kiln/file_lock.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;

Cache open_in(const fs::path& dir, std::uint64_t max_bytes = std::uint64_t{1} << 30) {
  return Cache::open({.directory = dir, .max_bytes = max_bytes, .enabled = true});
}

TEST(CacheKey, LengthPrefixedAndHex) {
  std::string k = cache_key({"ab", "c"});
  EXPECT_EQ(k.size(), 32u);
  EXPECT_NE(k, cache_key({"a", "bc"}));
  EXPECT_NE(k, cache_key({"abc"}));
  EXPECT_EQ(k, cache_key({"ab", "c"}));
}

TEST(Cache, HitReturnsTheStoredBytesAndAMissIsEmpty) {
  TempDirectory dir;
  Cache cache = open_in(dir / "cache");
  EXPECT_EQ(fs::status(dir / "cache").permissions() & fs::perms::all, fs::perms::owner_all);
  std::string key = cache_key({"kernel"});
  EXPECT_FALSE(cache.get(key));
  std::string bytes(
      "\x7f"
      "ELF\0binary",
      11);
  cache.put(key, bytes);
  EXPECT_EQ(cache.get(key), bytes);
  int made = 0;
  EXPECT_EQ(cache.get_or_make(key,
                              [&] {
                                ++made;
                                return std::string("other");
                              }),
            bytes);
  EXPECT_EQ(made, 0);
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_THROW(cache.get("../../etc/passwd"), InvalidArgument);
}

TEST(Cache, ACorruptEntryIsAMissAndIsReplaced) {
  TempDirectory dir;
  Cache cache = open_in(dir.path());
  std::string key = cache_key({"kernel"});
  cache.put(key, std::string(1000, 'k'));
  {
    std::fstream file(dir / key, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-10, std::ios::end);
    file.put('X');  // one flipped byte in the content
  }
  EXPECT_FALSE(cache.get(key)) << "the hash check caught it";
  EXPECT_FALSE(fs::exists(dir / key)) << "and the entry is gone";
  EXPECT_EQ(cache.get_or_make(key, [] { return std::string(1000, 'k'); }), std::string(1000, 'k'));
  EXPECT_EQ(cache.get(key), std::string(1000, 'k'));
  std::ofstream(dir / key, std::ios::trunc) << "kiln-cache-1\nshort";  // truncated
  EXPECT_FALSE(cache.get(key));
}

TEST(Cache, EvictsTheLeastRecentlyUsedPastTheCap) {
  TempDirectory dir;
  Cache cache = open_in(dir.path(), 2500);
  std::string a = cache_key({"a"}), b = cache_key({"b"}), c = cache_key({"c"});
  cache.put(a, std::string(1000, 'a'));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  cache.put(b, std::string(1000, 'b'));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(cache.get(a)) << "a is now the most recently used";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  cache.put(c, std::string(1000, 'c'));
  EXPECT_TRUE(cache.get(a));
  EXPECT_FALSE(cache.get(b)) << "b was the least recently used";
  EXPECT_TRUE(cache.get(c));
  EXPECT_LE(cache.stats().bytes, 2500u);
}

TEST(Cache, RefusesADirectoryOthersCanWriteOrOwn) {
  TempDirectory dir;
  fs::create_directory(dir / "shared");
  ::chmod((dir / "shared").c_str(), 0777);
  std::string open_error = testing::error_of([&] { open_in(dir / "shared"); });
  EXPECT_NE(open_error.find("writable by everyone"), std::string::npos) << open_error;
  EXPECT_NE(open_error.find("chmod 700"), std::string::npos) << open_error;
  ::chmod((dir / "shared").c_str(), 0770);
  EXPECT_NE(testing::error_of([&] { open_in(dir / "shared"); }).find("writable by its group"),
            std::string::npos);
  fs::create_directory(dir / "real");
  fs::create_directory_symlink(dir / "real", dir / "link");
  EXPECT_NE(testing::error_of([&] { open_in(dir / "link"); }).find("not a directory"),
            std::string::npos);
  fs::create_directory(dir / "readable");
  ::chmod((dir / "readable").c_str(), 0755);
  open_in(dir / "readable");
  EXPECT_EQ(fs::status(dir / "readable").permissions() & fs::perms::all,
            fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                fs::perms::others_read | fs::perms::others_exec)
      << "only readable by others: used, and its mode (its owner's choice) kept";
  if (::geteuid() != 0) GTEST_SKIP() << "giving a directory to another user needs root";
  fs::create_directory(dir / "theirs", dir.path());
  ::chmod((dir / "theirs").c_str(), 0700);
  ASSERT_EQ(::chown((dir / "theirs").c_str(), 65534, 65534), 0);
  std::string theirs = testing::error_of([&] { open_in(dir / "theirs"); });
  EXPECT_NE(theirs.find("belongs to uid 65534"), std::string::npos) << theirs;
}

TEST(Cache, ARefusedDirectoryIsAnUnusableDirectoryNamingIt) {
  TempDirectory dir;
  fs::create_directory(dir / "shared");
  ::chmod((dir / "shared").c_str(), 0777);
  try {
    open_in(dir / "shared");
    FAIL() << "a world-writable cache directory was accepted";
  } catch (const UnusableDirectory& e) {
    EXPECT_EQ(e.path(), dir / "shared");
  }
  internal::write_file(dir / "file", "not a directory");
  EXPECT_THROW(open_in(dir / "file"), UnusableDirectory);
}

TEST(Cache, NoPlaceForItIsAnUnusableDirectory) {
  ScopedEnv no("KILN_NO_CACHE", std::nullopt);
  ScopedEnv where("KILN_CACHE_DIR", std::nullopt);
  ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  ScopedEnv home("HOME", std::nullopt);
  try {
    Cache::open();
    FAIL() << "opened a cache with nowhere to put it";
  } catch (const UnusableDirectory& e) {
    EXPECT_EQ(e.path(), fs::path());
    EXPECT_NE(std::string(e.what()).find("KILN_CACHE_DIR"), std::string::npos) << e.what();
  }
}

TEST(Cache, AFailedStoreIsAMissNotAnError) {
  TempDirectory dir;
  Cache cache = open_in(dir / "cache");
  fs::remove_all(dir / "cache");
  internal::write_file(dir / "cache", "the directory is gone, a file is in its place");
  EXPECT_NO_THROW(cache.put(cache_key({"a"}), "a"));
  EXPECT_FALSE(cache.get(cache_key({"a"})));
  EXPECT_EQ(testing::read_file(dir / "cache"), "the directory is gone, a file is in its place");
}

TEST(Cache, EnvironmentChoosesTheDirectoryOrTurnsItOff) {
  TempDirectory dir;
  {
    ScopedEnv no("KILN_NO_CACHE", "1");
    ScopedEnv where("KILN_CACHE_DIR", (dir / "ignored").string());
    Cache off = Cache::open();
    EXPECT_FALSE(off.enabled());
    off.put(cache_key({"x"}), "bytes");
    EXPECT_FALSE(off.get(cache_key({"x"})));
    EXPECT_FALSE(fs::exists(dir / "ignored"));
  }
  ScopedEnv no("KILN_NO_CACHE", std::nullopt);
  {
    ScopedEnv where("KILN_CACHE_DIR", (dir / "chosen").string());
    EXPECT_EQ(Cache::open().directory(), dir / "chosen");
  }
  ScopedEnv where("KILN_CACHE_DIR", std::nullopt);
  ScopedEnv xdg("XDG_CACHE_HOME", (dir / "xdg").string());
  EXPECT_EQ(Cache::open().directory(), dir / "xdg" / "kiln");
  EXPECT_TRUE(fs::is_directory(dir / "xdg" / "kiln"));
}

TEST(Cache, FourProcessesMakingTheSameEntryAgreeAndLeaveOne) {
  TempDirectory dir;
  std::string key = cache_key({"same kernel"});
  std::vector<std::thread> threads;
  std::vector<RunResult> results(4);
  for (size_t i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      results[i] =
          run({.argv = testing::child_argv("cache-make", {dir.path().string(), key, "the-bytes"})});
    });
  }
  for (auto& t : threads) t.join();
  for (const RunResult& r : results) {
    EXPECT_TRUE(r.ok()) << r.output;
    EXPECT_EQ(r.output, "the-bytes\n");
  }
  std::vector<std::string> names = dir.listdir();
  std::erase_if(names, [](const std::string& name) {
    return name.starts_with("counters") || name == "CACHEDIR.TAG";
  });
  EXPECT_EQ(names, std::vector<std::string>{key}) << "one entry, no temporary file left";
  EXPECT_EQ(open_in(dir.path()).get(key), "the-bytes");
}

TEST(Cache, ClearRemovesEntriesAndKeepsTheDirectory) {
  TempDirectory dir;
  Cache cache = open_in(dir.path());
  cache.put(cache_key({"a"}), "a");
  cache.put(cache_key({"b"}), "b");
  EXPECT_EQ(cache.stats().entries, 2u);
  cache.clear();
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_TRUE(fs::is_directory(dir.path()));
}

TEST(Cache, RefusesADirectoryUnderAnAncestorOthersCouldChange) {
  TempDirectory dir;
  fs::create_directories(dir / "shared" / "deeper");
  ::chmod((dir / "shared").c_str(), 0777);
  try {
    open_in(dir / "shared" / "deeper" / "cache");
    FAIL() << "a cache under a world-writable directory was accepted";
  } catch (const UnusableDirectory& e) {
    EXPECT_EQ(e.path(), dir / "shared");
    EXPECT_NE(std::string(e.what()).find((dir / "shared").string() + " (above the cache"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("writable by everyone (mode 0777)"), std::string::npos)
        << e.what();
  }
  // Sticky, like /tmp: nobody can rename or remove what is another's, so it cannot be swapped.
  ::chmod((dir / "shared").c_str(), 01777);
  EXPECT_NO_THROW(open_in(dir / "shared" / "deeper" / "cache"));
  if (::geteuid() != 0) GTEST_SKIP() << "giving a directory to another user needs root";
  fs::create_directory(dir / "theirs");
  ::chmod((dir / "theirs").c_str(), 0755);
  ASSERT_EQ(::chown((dir / "theirs").c_str(), 65534, 65534), 0);
  std::string theirs = testing::error_of([&] { open_in(dir / "theirs" / "cache"); });
  EXPECT_NE(theirs.find((dir / "theirs").string() + " (above"), std::string::npos) << theirs;
  EXPECT_NE(theirs.find("belongs to uid 65534"), std::string::npos) << theirs;
}

TEST(Cache, KeepsUsingTheDirectoryItOpenedWhenItsPathIsSwapped) {
  TempDirectory dir;
  Cache cache = open_in(dir / "cache");
  // A copy on purpose: copies share the open directory.
  const Cache copy = cache;  // NOLINT(performance-unnecessary-copy-initialization)
  std::string mine = cache_key({"mine"});
  std::string planted = cache_key({"planted"});
  cache.put(mine, "my bytes");
  fs::rename(dir / "cache", dir / "moved");
  {
    Cache theirs = open_in(dir / "cache");  // a new directory at the old path, with an entry
    theirs.put(planted, "planted code");
  }
  EXPECT_EQ(cache.get(planted), std::nullopt) << "served an entry planted at the path";
  EXPECT_EQ(cache.get(mine), "my bytes");
  copy.put(cache_key({"later"}), "later");
  EXPECT_TRUE(fs::exists(dir / "moved" / cache_key({"later"})));
  EXPECT_FALSE(fs::exists(dir / "cache" / cache_key({"later"})));
  EXPECT_EQ(copy.stats().entries, 2u);
}

// Sets `path`'s modification time `minutes` ago.
void age(const fs::path& path, int minutes) {
  fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::minutes(minutes));
}

TEST(Cache, CountsTemporaryFilesAndReapsThoseOfGoneWriters) {
  TempDirectory dir;
  Cache cache = open_in(dir / "cache");
  cache.put(cache_key({"a"}), "entry");
  internal::write_file(dir / "cache" / ".tmp.x", std::string(1000, 'x'));  // an earlier version's
  age(dir / "cache" / ".tmp.x", Cache::kStaleTemporaryMinutes + 5);
  fs::path dead = dir / "cache" / ".kiln-tmp-2147483646-0123456789abcdef";  // no such pid
  internal::write_file(dead, std::string(200, 'd'));
  fs::path live = dir / "cache" / fmt::format(".kiln-tmp-{}-00000000000000ff", ::getpid());
  internal::write_file(live, std::string(30, 'l'));
  Cache::Stats before = cache.stats();
  EXPECT_EQ(before.entries, 1u);
  EXPECT_EQ(before.temporary_files, 3u);
  EXPECT_EQ(before.temporary_bytes, 1230u);

  Cache reopened = open_in(dir / "cache");  // opening reaps
  EXPECT_FALSE(fs::exists(dir / "cache" / ".tmp.x"));
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live)) << "reaped the file of a writer still running";
  Cache::Stats after = reopened.stats();
  EXPECT_EQ(after.temporary_files, 1u);
  EXPECT_EQ(after.temporary_bytes, 30u);
  EXPECT_EQ(after.entries, 1u);

  // Eviction reaps too, and an old file is stale even when its pid exists (reused).
  internal::write_file(dir / "cache" / ".tmp.y", "y");
  age(dir / "cache" / ".tmp.y", Cache::kStaleTemporaryMinutes + 5);
  age(live, Cache::kStaleTemporaryMinutes + 5);
  Cache small = open_in(dir / "cache", 64);
  internal::write_file(dir / "cache" / ".tmp.z", "z");
  age(dir / "cache" / ".tmp.z", Cache::kStaleTemporaryMinutes + 5);
  small.put(cache_key({"b"}), std::string(100, 'b'));  // past max_bytes / 32: measures, evicts
  EXPECT_FALSE(fs::exists(dir / "cache" / ".tmp.z"));
  EXPECT_FALSE(fs::exists(live));
  EXPECT_EQ(small.stats().temporary_files, 0u);
}

TEST(Cache, ServersPrecompiledHeadersAreCountedEvictedWithEntriesAndCleared) {
  TempDirectory dir;
  fs::path servers = dir / "cache" / "servers";
  Cache cache = open_in(dir / "cache", 2000);
  fs::create_directories(servers / "nvrtc-live.d");
  FileLock live(servers / "nvrtc-live.d.lock");  // held: its server runs
  internal::write_file(servers / "nvrtc-live.d" / "old.pch", std::string(1200, 'p'));
  age(servers / "nvrtc-live.d" / "old.pch", 10);  // last used ten minutes ago
  internal::write_file(servers / "nvrtc-live.d" / "old.files", std::string(50, 'm'));
  fs::create_directories(servers / "nvrtc-dead.d");
  internal::write_file(servers / "nvrtc-dead.d" / "x.pch", std::string(300, 'd'));
  internal::write_file(servers / "nvrtc-dead.d.lock", "");  // nobody holds it: the server is gone
  // Left by a kiln before these locks: reaped once nothing listens and it is old.
  fs::create_directories(servers / "nvrtc-older.d");
  age(servers / "nvrtc-older.d", 60 + 1);
  fs::create_directories(servers / "nvrtc-starting.d");

  Cache::Stats stats = cache.stats();
  EXPECT_FALSE(fs::exists(servers / "nvrtc-dead.d")) << "a dead server's directory is reaped";
  EXPECT_FALSE(fs::exists(servers / "nvrtc-older.d"));
  EXPECT_TRUE(fs::exists(servers / "nvrtc-starting.d")) << "it may be a server starting";
  EXPECT_TRUE(fs::exists(servers / "nvrtc-live.d" / "old.pch"));
  EXPECT_EQ(stats.server_files, 2u);
  EXPECT_EQ(stats.server_bytes, 1250u);

  // An entry that takes the cache past max_bytes with the PCH: the PCH, used longer ago, goes.
  cache.put(cache_key({"a"}), std::string(900, 'a'));
  EXPECT_FALSE(fs::exists(servers / "nvrtc-live.d" / "old.pch"));
  EXPECT_EQ(cache.get(cache_key({"a"})), std::string(900, 'a'));

  internal::write_file(servers / "nvrtc-live.d" / "new.pch", "p");
  cache.clear();
  EXPECT_TRUE(fs::is_empty(servers / "nvrtc-live.d")) << "clear() removes a live server's files";
  EXPECT_TRUE(fs::exists(servers / "nvrtc-live.d.lock"));
  EXPECT_EQ(cache.stats().server_files, 0u);
}

}  // namespace
}  // namespace kiln
