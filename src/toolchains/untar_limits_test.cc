// untar()'s limits (UntarOptions) through the library API: an archive past one is refused naming
// the limit, and nothing the call made is left.
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/tar.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
std::string message_of(const fs::path& archive, const fs::path& dir, const UntarOptions& options) {
  try {
    untar(archive, dir, options);
  } catch (const ArchiveError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(UntarLimits, DefaultsAreGenerous) {
  UntarOptions defaults;
  EXPECT_EQ(defaults.max_bytes, uint64_t{8} << 30);
  EXPECT_EQ(defaults.max_members, 1'000'000u);
}

TEST(UntarLimits, PastMaxBytesNothingThisCallMadeIsLeft) {
  TempDirectory tmp;
  testing::write_tar_gz(tmp.path() / "a.tar.gz", {{"sub/dir/one", std::string(600, 'a')},
                                                  {"sub/two", std::string(600, 'b')}});
  fs::create_directory(tmp.path() / "out");
  std::ofstream(tmp.path() / "out" / "mine") << "mine";
  std::string message =
      message_of(tmp.path() / "a.tar.gz", tmp.path() / "out", {.max_bytes = 1000});
  EXPECT_NE(message.find("member 'sub/two' goes past the limit of 1000 bytes in all"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("UntarOptions::max_bytes"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(tmp.path() / "out" / "sub")) << "its files and directories are removed";
  EXPECT_TRUE(fs::exists(tmp.path() / "out" / "mine")) << "what was there stays";
  // Exactly at the limit is fine.
  untar(tmp.path() / "a.tar.gz", tmp.path() / "out", {.max_bytes = 1200});
  EXPECT_EQ(fs::file_size(tmp.path() / "out" / "sub" / "two"), 600u);
}

TEST(UntarLimits, PastMaxMembersTheTargetItCreatedIsRemovedToo) {
  TempDirectory tmp;
  testing::write_tar_gz(tmp.path() / "a.tar.gz", {{"a", "a"}, {"b", "b"}, {"c", "c"}});
  std::string message =
      message_of(tmp.path() / "a.tar.gz", tmp.path() / "new" / "deeper", {.max_members = 2});
  EXPECT_NE(message.find("member 'c' goes past the limit of 2 members"), std::string::npos)
      << message;
  EXPECT_FALSE(fs::exists(tmp.path() / "new"));
  untar(tmp.path() / "a.tar.gz", tmp.path() / "new", {.max_members = 3});
  EXPECT_TRUE(fs::exists(tmp.path() / "new" / "c"));
}

}  // namespace
}  // namespace kiln
