#include "target_libc.h"

#include <gtest/gtest.h>

namespace kiln::internal {
namespace {

// GNU ld's words (binutils 2.40) when gcc-aarch64-linux-gnu is installed without
// libc6-dev-arm64-cross, as on a fresh machine before scripts/install-deps.sh learned better.
constexpr std::string_view kGnuLd =
    "/usr/lib/gcc-cross/aarch64-linux-gnu/12/../../../../aarch64-linux-gnu/bin/ld: cannot find "
    "crti.o: No such file or directory\ncollect2: error: ld returned 1 exit status\n";

TEST(TargetLibc, CrossGccNamesItsTargetsPackage) {
  std::string note =
      missing_target_libc_note(kGnuLd, {"aarch64-linux-gnu-gcc", "-shared", "-o", "x.so", "x.c"});
  EXPECT_NE(note.find("C library for aarch64-linux-gnu"), std::string::npos) << note;
  EXPECT_NE(note.find("apt-get install libc6-dev-arm64-cross"), std::string::npos) << note;
  EXPECT_EQ(note.find('\n'), std::string::npos) << "one line: " << note;
}

TEST(TargetLibc, TheCompilerBehindALauncherIsTheTarget) {
  std::string note =
      missing_target_libc_note("ld: cannot find -lc: No such file or directory\n",
                               {"ccache", "/usr/bin/riscv64-linux-gnu-g++", "-o", "a", "a.cc"});
  EXPECT_NE(note.find("libc6-dev-riscv64-cross"), std::string::npos) << note;
}

TEST(TargetLibc, AnUnknownTargetStillSaysWhatIsMissing) {
  std::string note = missing_target_libc_note("ld.lld: error: cannot open Scrt1.o\n",
                                              {"clang", "--target=wasm32-unknown-wasi", "a.c"});
  EXPECT_NE(note.find("C library for wasm32-unknown-wasi"), std::string::npos) << note;
  EXPECT_EQ(note.find("apt-get"), std::string::npos) << "no package to name: " << note;
}

TEST(TargetLibc, OtherFailuresGetNoNote) {
  EXPECT_EQ(missing_target_libc_note("undefined reference to `add'\n", {"aarch64-linux-gnu-gcc"}),
            "");
  EXPECT_EQ(missing_target_libc_note("cannot find -lcuda\n", {"gcc"}), "") << "-lcuda is not -lc";
}

}  // namespace
}  // namespace kiln::internal
