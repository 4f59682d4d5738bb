#include "internal/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
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
  EXPECT_NE(std::string(e.what()).find("write '" + (dir / "out.o").string() + "': Is a directory"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out.o"});
}

TEST(WriteFileAtomically, APlantedSymlinkAtTheNameIsReplacedNotFollowed) {
  TempDirectory dir;
  write_file(dir / "victim", "precious");
  fs::create_symlink(dir / "victim", dir / "out.o");
  write_file_atomically(dir / "out.o", "built", 0644);
  EXPECT_EQ(read_file(dir / "victim"), "precious");
  EXPECT_FALSE(fs::is_symlink(dir / "out.o"));
  EXPECT_EQ(read_file(dir / "out.o"), "built");
}

TEST(WriteFileAtomically, TemporaryNamesAreUnpredictableAndNameTheirWriter) {
  std::string a = temporary_name();
  std::string b = temporary_name();
  EXPECT_NE(a, b);
  EXPECT_TRUE(a.starts_with(fmt::format(".kiln-tmp-{}-", ::getpid()))) << a;
  EXPECT_GE(a.size(), fmt::format(".kiln-tmp-{}-", ::getpid()).size() + 16) << a;
  EXPECT_EQ(temporary_writer(a), ::getpid());
  EXPECT_EQ(temporary_writer(".kiln-tmp-123-w0"), 123);
  EXPECT_EQ(temporary_writer(".tmp.x"), std::nullopt);
  EXPECT_EQ(temporary_writer(".kiln-tmp-x"), std::nullopt);
  // What earlier versions named theirs (".kiln-tmp-<pid>-<n>-<name>", counting from 0): symlinks
  // planted at all of those change nothing.
  TempDirectory dir;
  write_file(dir / "victim", "precious");
  for (int n = 0; n < 64; ++n) {
    fs::create_symlink(dir / "victim", dir / fmt::format(".kiln-tmp-{}-{}-out.o", ::getpid(), n));
  }
  write_file_atomically(dir / "out.o", "built");
  EXPECT_EQ(read_file(dir / "victim"), "precious");
  EXPECT_EQ(read_file(dir / "out.o"), "built");
}

// Moving across filesystems copies into a temporary file beside the destination: one created
// new, never a symlink someone planted where the copy goes.
TEST(MoveIntoPlace, AcrossFilesystemsNeverWritesThroughAPlantedSymlink) {
  TempDirectory dir;
  TempDirectory other(
      {.custom_path = fs::path("/dev/shm") / fmt::format("kiln-move-test-{}", ::getpid())});
  struct stat here {
  }, there{};
  if (::stat(dir.path().c_str(), &here) != 0 || ::stat(other.path().c_str(), &there) != 0 ||
      here.st_dev == there.st_dev) {
    GTEST_SKIP() << "needs /dev/shm on another filesystem than the temporary directory";
  }
  write_file(dir / "victim", "precious");
  fs::create_symlink(dir / "victim", dir / "lib.so");
  fs::create_symlink(dir / "victim", dir / "lib.so.kiln-tmp");  // what earlier versions used
  write_file(other / "lib.so", "built");
  ::chmod((other / "lib.so").c_str(), 0755);
  move_into_place(other / "lib.so", dir / "lib.so");
  EXPECT_EQ(read_file(dir / "victim"), "precious");
  EXPECT_FALSE(fs::is_symlink(dir / "lib.so"));
  EXPECT_EQ(read_file(dir / "lib.so"), "built");
  EXPECT_EQ(fs::status(dir / "lib.so").permissions() & fs::perms::all,
            static_cast<fs::perms>(0755));
  EXPECT_FALSE(fs::exists(other / "lib.so")) << "moved, not copied";

  // A destination rename() cannot replace: an error, and no temporary file left behind.
  fs::create_directories(dir / "taken" / "inside");
  write_file(other / "again", "x");
  EXPECT_THROW(move_into_place(other / "again", dir / "taken"), SystemError);
  for (const std::string& name : names_in(dir.path())) {
    EXPECT_FALSE(name.starts_with(".kiln-tmp")) << name;
  }
}

// A FIFO (or, as root, /dev/null) where an output goes is not renamed over: it stays what it
// was, and the error says what is there.
TEST(WriteFileAtomically, AFifoAtTheNameIsRefusedAndStaysAFifo) {
  TempDirectory dir;
  ASSERT_EQ(::mkfifo((dir / "out.o").c_str(), 0600), 0);
  for (const std::function<void()>& write :
       std::vector<std::function<void()>>{[&] { write_file_atomically(dir / "out.o", "x"); },
                                          [&] {
                                            write_file(dir / "made.o", "x");
                                            move_into_place(dir / "made.o", dir / "out.o");
                                          }}) {
    try {
      write();
      ADD_FAILURE() << "replaced a FIFO";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("it is a FIFO, not a file"), std::string::npos)
          << e.what();
    }
    EXPECT_TRUE(fs::is_fifo(dir / "out.o"));
  }
}

TEST(MoveIntoPlace, AMissingSourceIsASystemError) {
  TempDirectory dir;
  SystemError e = system_error_of([&] { move_into_place(dir / "none", dir / "there"); });
  EXPECT_EQ(e.error_number(), ENOENT);
}

}  // namespace
}  // namespace kiln::internal
