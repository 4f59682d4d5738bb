#include "kiln/direct_cache.h"

#include <sys/stat.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "internal/files.h"
#include "kiln/temp_directory.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

TEST(ParseDepfile, ContinuationsEscapesAndRelativePaths) {
  std::string text =
      "out/a.o: a.c /usr/include/stdio.h \\\n  my\\ dir/b.h c$$.h\\\r\n d.h\n"
      "a.c:\n\nx.o : a.c e.h\n";
  std::vector<fs::path> paths = parse_depfile(text, "/work");
  std::vector<fs::path> expected = {"/work/a.c",        "/usr/include/stdio.h",
                                    "/work/my dir/b.h", "/work/c$.h",
                                    "/work/d.h",        "/work/e.h"};
  EXPECT_EQ(paths, expected);
}

TEST(ParseDepfile, EmptyTextNamesNothing) { EXPECT_TRUE(parse_depfile("", "/w").empty()); }

class DirectCacheTest : public ::testing::Test {
 protected:
  DirectCacheTest() : cache_(Cache::open({.directory = dir_ / "cache", .enabled = true})) {
    internal::write_file(source(), "#include \"h.h\"\n");
    internal::write_file(header(), "int x;\n");
  }
  fs::path source() const { return dir_ / "a.c"; }
  fs::path header() const { return dir_ / "h.h"; }
  // As if the compile took place after the files were written (the kernel's clock ticks).
  static void later() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

  TempDirectory dir_;
  Cache cache_;
};

TEST_F(DirectCacheTest, AHitNeedsEveryRecordedHeaderUnchanged) {
  later();
  DirectCache first(cache_, "base", {source()});
  EXPECT_FALSE(first.get());
  ASSERT_TRUE(first.put({source(), header()}, "object-1"));
  EXPECT_EQ(DirectCache(cache_, "base", {source()}).get(), "object-1");
  EXPECT_FALSE(DirectCache(cache_, "other", {source()}).get());
  internal::write_file(header(), "int y;\n");
  EXPECT_FALSE(DirectCache(cache_, "base", {source()}).get());
  fs::remove(header());
  EXPECT_FALSE(DirectCache(cache_, "base", {source()}).get());
}

TEST_F(DirectCacheTest, NothingIsStoredWhenAnInputChangedDuringTheCompile) {
  later();
  DirectCache edited_source(cache_, "base", {source()});
  internal::write_file(source(), "#include \"h.h\"\nint z;\n");  // an editor, mid-compile
  EXPECT_FALSE(edited_source.put({header()}, "stale"));
  EXPECT_FALSE(DirectCache(cache_, "base", {source()}).get());

  later();
  DirectCache edited_header(cache_, "base2", {source()});
  internal::write_file(header(), "int w;\n");
  EXPECT_FALSE(edited_header.put({header()}, "stale"));
  EXPECT_FALSE(DirectCache(cache_, "base2", {source()}).get());
}

TEST_F(DirectCacheTest, FilesUnderTheIgnoredDirectoryAreNotRecorded) {
  later();
  DirectCache direct(cache_, "base", {source()});
  ASSERT_TRUE(direct.put({dir_ / "work" / "gone.h"}, "bytes", {dir_ / "work"}));
  EXPECT_EQ(DirectCache(cache_, "base", {source()}).get(), "bytes");
}

// An entry's header list is data from the cache, maybe a remote one: a line naming /dev/zero, a
// FIFO nobody writes, a directory, or a link to one of them is a miss at once, never an endless
// read (until memory runs out) or an open that waits for a writer forever.
TEST_F(DirectCacheTest, AHeaderThatIsNoRegularFileIsAMissWithoutReadingIt) {
  later();
  // The entry as DirectCache::put writes it, under the key it looks up ("kiln-direct-2").
  std::string key = cache_key({"kiln-direct-2", "base"});
  std::string hash = content_key("int x;\n");
  cache_.put(key, hash + ' ' + header().string() + "\n\nobject");
  ASSERT_EQ(DirectCache(cache_, "base", {source()}).get(), "object") << "the entry's key changed";
  fs::path fifo = dir_ / "fifo.h";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directory(dir_ / "dir.h");
  fs::create_symlink("/dev/zero", dir_ / "zero-link.h");
  for (const fs::path& special : {fs::path("/dev/zero"), fifo, dir_ / "dir.h", dir_ / "zero-link.h",
                                  fs::path("/dev/urandom")}) {
    SCOPED_TRACE(special.string());
    cache_.put(key, hash + ' ' + header().string() + '\n' + content_key("") + ' ' +
                        special.string() + "\n\nobject");
    auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(DirectCache(cache_, "base", {source()}).get(), std::nullopt);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  }
}

}  // namespace
}  // namespace kiln
