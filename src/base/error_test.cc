#include "kiln/error.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace kiln {
namespace {

TEST(Error, ToolFailedKeepsTheSeedsFormat) {
  ToolFailed e("Linking error using ld.lld:", "undefined symbol: foo\n", "ld.lld a.o -o a.so");
  EXPECT_STREQ(
      e.what(),
      "Linking error using ld.lld:\nundefined symbol: foo\n\nCommand line: ld.lld a.o -o a.so");
  EXPECT_EQ(e.output(), "undefined symbol: foo\n");
  EXPECT_EQ(e.command_line(), "ld.lld a.o -o a.so");
}

TEST(Error, ToolFailedWithStatusPutsItBeforeTheCommandLine) {
  ToolFailed e("Compilation error:", "partial", "cc x.c", "killed by signal SIGSEGV");
  EXPECT_STREQ(e.what(),
               "Compilation error:\npartial\nkilled by signal SIGSEGV\nCommand line: cc x.c");
}

TEST(Error, SystemErrorNamesOperationAndErrno) {
  SystemError e("open '/x'", ENOENT);
  EXPECT_STREQ(e.what(), "open '/x': No such file or directory");
  EXPECT_EQ(e.error_number(), ENOENT);
}

TEST(Error, HierarchyIsRootedAtError) {
  EXPECT_THROW(throw ToolNotFound("gcc", "missing"), CannotRunTool);
  EXPECT_THROW(throw ToolNotExecutable("gcc", "no"), Error);
  EXPECT_THROW(throw TimeoutError("late"), Error);
  EXPECT_THROW(throw ChildProcessError("died"), Error);
  EXPECT_THROW(throw InvalidArgument("bad"), Error);
  EXPECT_THROW(throw FileNotFound("gone"), Error);
}

}  // namespace
}  // namespace kiln
