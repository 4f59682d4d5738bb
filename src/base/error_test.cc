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
  ToolFailed e("Compilation error:", "partial", "cc x.c", Ending::signaled(11));
  EXPECT_STREQ(e.what(),
               "Compilation error:\npartial\nkilled by signal SIGSEGV\nCommand line: cc x.c");
  EXPECT_EQ(e.ending(), Ending::signaled(11));
  ToolFailed late("Compilation error:", "", "cc x.c", Ending::timed_out(), "timed out after 2s");
  EXPECT_EQ(late.status(), "timed out after 2s") << "a given status line wins over the ending's";
}

TEST(Error, TheSeedsTextAndTheBriefTextAreWrittenFromTheSameFields) {
  ToolFailure failure{.label = "NVRTC compilation failed:",
                      .output = "k.cu(1): error: expected an expression\n",
                      .command_line = "nvrtc --gpu-architecture=sm_80 k.cu",
                      .status = "NVRTC_ERROR_COMPILATION",
                      .source = "__global__ void k() { int x = ; }",
                      .source_path = "k.cu"};
  EXPECT_EQ(seed_text(failure),
            "__global__ void k() { int x = ; }\nNVRTC compilation failed:\n"
            "k.cu(1): error: expected an expression\nNVRTC_ERROR_COMPILATION\n"
            "Command line: nvrtc --gpu-architecture=sm_80 k.cu");
  EXPECT_EQ(brief_text(failure),
            "NVRTC compilation failed:\nk.cu(1): error: expected an expression\n"
            "NVRTC_ERROR_COMPILATION\nCommand line: nvrtc --gpu-architecture=sm_80 k.cu");
  ToolFailed e(failure);
  EXPECT_EQ(e.what(), seed_text(failure)) << "the exception's message is the seed's";
  EXPECT_EQ(e.label(), "NVRTC compilation failed:");
  EXPECT_EQ(e.output(), failure.output) << "the log alone, without the label";
  EXPECT_EQ(e.source(), failure.source);
  EXPECT_EQ(e.source_path(), "k.cu");
  failure.source.clear();
  EXPECT_EQ(seed_text(failure), brief_text(failure)) << "without a source the two agree";
}

TEST(Error, ToolFailedFromFieldsGetsTheEndingsStatusLine) {
  ToolFailed e(ToolFailure{.label = "Compilation error:", .ending = Ending::signaled(11)});
  EXPECT_EQ(e.status(), "killed by signal SIGSEGV");
  EXPECT_EQ(e.failure().status, "killed by signal SIGSEGV");
}

TEST(Error, ToolFailedCarriesHowTheToolEnded) {
  ToolFailed plain("Compilation error:", "", "cc x.c");
  EXPECT_EQ(plain.ending(), Ending::exited(1)) << "an in-process compile that failed";
  EXPECT_EQ(plain.status(), "");
  ToolFailed exited("Compilation error:", "", "cc x.c", Ending::exited(4));
  EXPECT_EQ(exited.status(), "") << "a plain non-zero exit has no status line";
  EXPECT_EQ(ToolFailed("x", "", "y", Ending::cancelled()).status(), "cancelled");
  EXPECT_EQ(Ending::exited(2).text(), "exit code 2");
  EXPECT_EQ(Ending::timed_out().text(), "timed out");
  EXPECT_TRUE(Ending::exited(0).ok());
  EXPECT_FALSE(Ending::signaled(9).ok());
}

TEST(Error, SystemErrorNamesOperationAndErrno) {
  SystemError e("open '/x'", ENOENT);
  EXPECT_STREQ(e.what(), "open '/x': No such file or directory");
  EXPECT_EQ(e.error_number(), ENOENT);
  EXPECT_EQ(e.operation(), "open '/x'");
}

TEST(Error, LibraryCallFailedKeepsTheCallAndItsResult) {
  LibraryCallFailed e("nvrtcVersion", 7, "nvrtcVersion failed: NVRTC_ERROR_INTERNAL_ERROR");
  EXPECT_STREQ(e.what(), "nvrtcVersion failed: NVRTC_ERROR_INTERNAL_ERROR");
  EXPECT_EQ(e.call(), "nvrtcVersion");
  EXPECT_EQ(e.result(), 7);
}

TEST(Error, UnusableDirectoryNamesTheDirectory) {
  UnusableDirectory e("/tmp/shared", "kiln cache: /tmp/shared is writable by everyone");
  EXPECT_EQ(e.path(), "/tmp/shared");
  EXPECT_STREQ(e.what(), "kiln cache: /tmp/shared is writable by everyone");
}

TEST(Error, NewClassesSitWhereACallerCatchesThem) {
  EXPECT_THROW(throw UnsafeArchiveMember("Tar error: refusing member '../x'"), ArchiveError);
  EXPECT_THROW(throw ArchiveError("Tar error: truncated"), Error);
  EXPECT_THROW(throw InvalidState("submit: the pool has been shut down"), InvalidArgument);
  EXPECT_THROW(throw UnexpectedOutput("Compilation error: empty result is generated"), Error);
  EXPECT_THROW(throw LibraryCallFailed("nvJitLinkCreate", 1, "failed"), Error);
  EXPECT_THROW(throw UnusableDirectory({}, "no HOME"), Error);
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
