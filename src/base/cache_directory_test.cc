// Cache::open and the directory it is given: a new path is made 0700 and tagged as kiln's; an
// existing directory is never chmod-ed, and one that holds files of the user's (KILN_CACHE_DIR
// naming $HOME, a project, /) is refused with its contents left exactly as they were.
#include <sys/stat.h>

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "internal/files.h"
#include "kiln/cache.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

Cache open_in(const fs::path& dir) {
  return Cache::open({.directory = dir, .enabled = true, .remote = RemoteCacheOptions{}});
}

unsigned mode_of(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

TEST(CacheDirectory, AUsersDirectoryIsRefusedAndLeftAsItWas) {
  TempDirectory dir;
  fs::path home = dir / "home";  // stands for $HOME, a project, or /
  fs::create_directory(home);
  ASSERT_EQ(::chmod(home.c_str(), 0755), 0);
  internal::write_file(home / "notes.txt", "mine\n");
  fs::create_directory(home / "servers");  // a name kiln uses too does not make it kiln's
  try {
    open_in(home);
    FAIL() << "a directory of the user's was taken for the cache";
  } catch (const UnusableDirectory& e) {
    std::string message = e.what();
    EXPECT_EQ(e.path(), home);
    for (const std::string& part :
         {home.string(), std::string("mode 0755"), std::string("notes.txt"),
          std::string("kiln did not make"), std::string("does not exist yet")}) {
      EXPECT_NE(message.find(part), std::string::npos) << part << " not in: " << message;
    }
  }
  EXPECT_EQ(mode_of(home), 0755u);
  EXPECT_EQ(names_in(home), (std::set<std::string>{"notes.txt", "servers"}));
  EXPECT_EQ(internal::read_file(home / "notes.txt"), "mine\n");
}

TEST(CacheDirectory, ANewPathIsMadePrivateAndTagged) {
  TempDirectory dir;
  fs::path made = dir / "new" / "cache";
  Cache cache = open_in(made);
  EXPECT_EQ(mode_of(made), 0700u);
  EXPECT_TRUE(internal::read_file(made / "CACHEDIR.TAG").starts_with("Signature: 8a477f59"));
  cache.put(cache_key({"k"}), "bytes");
  EXPECT_EQ(open_in(made).get(cache_key({"k"})), "bytes");  // tagged: kiln's from now on
}

// An empty directory made for the cache (mkdir with the usual umask) is used as it is: its mode
// is its owner's choice; what kiln writes in it keeps others out (entries 0600).
TEST(CacheDirectory, AnEmptyDirectoryIsTakenOnWithItsModeKept) {
  TempDirectory dir;
  fs::path made = dir / "for-kiln";
  fs::create_directory(made);
  ASSERT_EQ(::chmod(made.c_str(), 0755), 0);
  Cache cache = open_in(made);
  cache.put(cache_key({"k"}), "bytes");
  EXPECT_EQ(mode_of(made), 0755u);
  EXPECT_TRUE(fs::exists(made / "CACHEDIR.TAG"));
  for (const std::string& name : names_in(made)) {
    if (name.size() == 32) {
      EXPECT_EQ(mode_of(made / name), 0600u) << name;
    }
  }
  EXPECT_EQ(open_in(made).get(cache_key({"k"})), "bytes");
}

// A cache an earlier kiln filled (no tag yet) holds only names kiln makes: it stays in use.
TEST(CacheDirectory, AnUntaggedCacheOfAnEarlierKilnIsStillUsed) {
  TempDirectory dir;
  fs::path old = dir / "old";
  {
    Cache cache = open_in(old);
    cache.put(cache_key({"k"}), "bytes");
  }
  fs::remove(old / "CACHEDIR.TAG");
  fs::create_directory(old / "identities");
  EXPECT_EQ(open_in(old).get(cache_key({"k"})), "bytes");
  EXPECT_TRUE(fs::exists(old / "CACHEDIR.TAG"));
}

TEST(CacheDirectory, AnotherProgramsTaggedCacheIsRefused) {
  TempDirectory dir;
  fs::path theirs = dir / "theirs";
  fs::create_directory(theirs);
  ::chmod(theirs.c_str(), 0700);
  std::string tag = "Signature: 8a477f597d28d172789f06886806bc55\n# made by another tool\n";
  internal::write_file(theirs / "CACHEDIR.TAG", tag);
  EXPECT_THROW(open_in(theirs), UnusableDirectory);
  EXPECT_EQ(internal::read_file(theirs / "CACHEDIR.TAG"), tag);
  EXPECT_EQ(names_in(theirs), (std::set<std::string>{"CACHEDIR.TAG"}));
}

}  // namespace
}  // namespace kiln
