#include "internal/files.h"

#include <sys/stat.h>

#include <cerrno>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/temp_directory.h"

namespace kiln::internal {
namespace {

namespace fs = std::filesystem;

// The SystemError `fn` throws (fails the test when it throws nothing or something else).
SystemError system_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const SystemError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a kiln::SystemError";
  return SystemError("nothing thrown", 0);
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

TEST(WriteFile, WritesAndReplacesTheWholeFile) {
  TempDirectory dir;
  write_file(dir / "a.cc", "int main() { return 0; }\n");
  EXPECT_EQ(read_file(dir / "a.cc"), "int main() { return 0; }\n");
  write_file(dir / "a.cc", "short");
  EXPECT_EQ(read_file(dir / "a.cc"), "short") << "truncated, not overwritten in part";
}

TEST(WriteFile, AFullDeviceIsASystemErrorNamingThePath) {
  SystemError e = system_error_of([] { write_file("/dev/full", "bytes"); });
  EXPECT_EQ(e.error_number(), ENOSPC);
  EXPECT_EQ(std::string(e.what()), "write '/dev/full': No space left on device");
}

TEST(WriteFile, AMissingDirectoryIsASystemErrorNotFileNotFound) {
  TempDirectory dir;
  try {
    write_file(dir / "missing" / "a.cc", "x");
    FAIL() << "expected a kiln::SystemError";
  } catch (const FileNotFound& e) {
    FAIL() << "a failed write is not a missing input: " << e.what();
  } catch (const SystemError& e) {
    EXPECT_EQ(e.error_number(), ENOENT);
    EXPECT_NE(std::string(e.what()).find((dir / "missing" / "a.cc").string()), std::string::npos)
        << e.what();
  }
}

TEST(WriteFileAtomically, ReplacesTheFileAndGivesTheMode) {
  TempDirectory dir;
  write_file_atomically(dir / "lib.so", "old");
  write_file_atomically(dir / "lib.so", "new", 0755);
  EXPECT_EQ(read_file(dir / "lib.so"), "new");
  struct stat st {};
  ASSERT_EQ(::stat((dir / "lib.so").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"lib.so"}) << "no temporary file left";
}

TEST(WriteFileAtomically, ANonDirectoryParentIsASystemErrorAndLeavesNothing) {
  TempDirectory dir;
  write_file(dir / "plain", "a file, not a directory");
  SystemError e = system_error_of([&] { write_file_atomically(dir / "plain" / "out.o", "x"); });
  EXPECT_EQ(e.error_number(), ENOTDIR);
  EXPECT_NE(std::string(e.what()).find((dir / "plain" / "out.o").string()), std::string::npos)
      << e.what();
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"plain"});
}

TEST(WriteFileAtomically, ADirectoryInTheWayIsASystemErrorAndLeavesNoTemporaryFile) {
  TempDirectory dir;
  fs::create_directory(dir / "out.o");
  fs::create_directory(dir / "out.o" / "inside");  // rename() cannot replace a non-empty directory
  SystemError e = system_error_of([&] { write_file_atomically(dir / "out.o", "x"); });
  EXPECT_NE(std::string(e.what()).find("rename"), std::string::npos) << e.what();
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out.o"});
}

TEST(MoveIntoPlace, AMissingSourceIsASystemError) {
  TempDirectory dir;
  SystemError e = system_error_of([&] { move_into_place(dir / "none", dir / "there"); });
  EXPECT_EQ(e.error_number(), ENOENT);
}

}  // namespace
}  // namespace kiln::internal
