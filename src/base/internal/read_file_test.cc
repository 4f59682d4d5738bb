// internal::read_file's failures say what the system said, and a directory is never read as "".
#include <gtest/gtest.h>

#include <fstream>

#include "internal/files.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"

namespace kiln::internal {
namespace {

namespace fs = std::filesystem;

std::string message_of(const fs::path& path) {
  try {
    read_file(path, "cannot read manifest");
  } catch (const FileNotFound& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ReadFile, ReadsTheWholeFile) {
  TempDirectory tmp;
  std::ofstream(tmp.path() / "a", std::ios::binary) << std::string(100000, 'x') << "end";
  EXPECT_EQ(read_file(tmp.path() / "a").size(), 100003u);
}

TEST(ReadFile, AMissingFileSaysSo) {
  TempDirectory tmp;
  EXPECT_EQ(
      message_of(tmp.path() / "nope"),
      "cannot read manifest '" + (tmp.path() / "nope").string() + "': No such file or directory");
}

TEST(ReadFile, ADirectoryIsAnErrorSayingIsADirectory) {
  TempDirectory tmp;
  EXPECT_EQ(message_of(tmp.path()),
            "cannot read manifest '" + tmp.path().string() + "': Is a directory");
}

}  // namespace
}  // namespace kiln::internal
