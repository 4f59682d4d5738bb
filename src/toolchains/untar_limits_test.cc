// untar()'s limits (UntarOptions) through the library API: an archive past one is refused naming
// the limit, and nothing the call made is left.
#include <archive.h>
#include <archive_entry.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/tar.h"
#include "kiln/temp_directory.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// A gzip tar of regular members {name, contents}.
void write_tar(const fs::path& path,
               const std::vector<std::pair<std::string, std::string>>& files) {
  archive* writer = archive_write_new();
  archive_write_add_filter_gzip(writer);
  archive_write_set_format_pax_restricted(writer);
  ASSERT_EQ(archive_write_open_filename(writer, path.c_str()), ARCHIVE_OK);
  for (const auto& [name, data] : files) {
    archive_entry* entry = archive_entry_new();
    archive_entry_copy_pathname(entry, name.c_str());
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    archive_entry_set_size(entry, static_cast<la_int64_t>(data.size()));
    ASSERT_EQ(archive_write_header(writer, entry), ARCHIVE_OK);
    ASSERT_EQ(archive_write_data(writer, data.data(), data.size()),
              static_cast<la_ssize_t>(data.size()));
    archive_entry_free(entry);
  }
  EXPECT_EQ(archive_write_close(writer), ARCHIVE_OK);
  archive_write_free(writer);
}

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
  write_tar(tmp.path() / "a.tar.gz",
            {{"sub/dir/one", std::string(600, 'a')}, {"sub/two", std::string(600, 'b')}});
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
  write_tar(tmp.path() / "a.tar.gz", {{"a", "a"}, {"b", "b"}, {"c", "c"}});
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
