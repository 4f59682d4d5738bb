// kiln ndk, run as a user would, with a clang named aarch64-linux-android24-clang.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_support.h"
#include "kiln/paths.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::kiln_cli;

TEST(NdkCli, SharedAndStaticThroughTheNdkCompiler) {
  std::optional<fs::path> clang = which("clang-14");
  fs::path llvm_bin = "/usr/lib/llvm-14/bin";
  if (!clang || !fs::exists(llvm_bin / "llvm-ar") || !which("ld.lld")) {
    GTEST_SKIP() << "needs clang-14, ld.lld and llvm-14's tools (scripts/install-deps.sh)";
  }
  TempDirectory dir;
  fs::path cc = dir / "aarch64-linux-android24-clang";
  fs::create_symlink(*clang, cc);
  for (const char* tool : {"llvm-ar", "llvm-ranlib"})
    fs::create_symlink(llvm_bin / tool, dir / tool);
  std::ofstream(dir / "add.c") << "int kiln_add(int a, int b) { return a + b; }\n";
  ASSERT_TRUE(run({.argv = {cc.string(), "-c", "-fPIC", (dir / "add.c").string(), "-o",
                            (dir / "add.o").string()}})
                  .ok());
  std::map<std::string, std::optional<std::string>> env = {{"TVM_NDK_CC", cc.string()}};
  RunResult shared =
      kiln_cli({"ndk", "shared", "-o", (dir / "libadd.so").string(), (dir / "add.o").string(), "--",
                "-shared", "-fPIC", "-nostdlib", "-fuse-ld=lld"},
               env);
  EXPECT_EQ(shared.exit_code, 0) << shared.error_output;
  EXPECT_EQ(testing::read_file(dir / "libadd.so").substr(0, 4),
            "\x7f"
            "ELF");
  RunResult archive =
      kiln_cli({"ndk", "static", "-o", (dir / "libadd.a").string(), (dir / "add.o").string()}, env);
  EXPECT_EQ(archive.exit_code, 0) << archive.error_output;
  EXPECT_EQ(testing::read_file(dir / "libadd.a").substr(0, 8), "!<arch>\n");
  RunResult unset =
      kiln_cli({"ndk", "static", "-o", (dir / "libx.a").string(), (dir / "add.o").string()},
               {{"TVM_NDK_CC", std::nullopt}});
  EXPECT_EQ(unset.exit_code, 1);
  EXPECT_NE(unset.error_output.find("TVM_NDK_CC"), std::string::npos);
}

}  // namespace
}  // namespace kiln
