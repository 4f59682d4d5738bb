// The NDK's standalone compiler for real: TVM_NDK_CC is a symlink named
// aarch64-linux-android24-clang to Debian's clang (clang takes its target from that name), with
// llvm-ar, llvm-ranlib and llvm-nm beside it.
#include "kiln/ndk.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/tar.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln::ndk {
namespace {

namespace fs = std::filesystem;

class Ndk : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<fs::path> clang = which("clang-14");
    if (!clang) clang = which("clang");
    fs::path llvm_bin = "/usr/lib/llvm-14/bin";
    if (!clang || !fs::exists(llvm_bin / "llvm-ar") || !which("ld.lld")) {
      GTEST_SKIP() << "needs clang-14, ld.lld and llvm-14's llvm-ar (scripts/install-deps.sh)";
    }
    fs::create_directory(dir / "bin");
    cc = dir / "bin" / "aarch64-linux-android24-clang";
    fs::create_symlink(*clang, cc);
    for (const char* tool : {"llvm-ar", "llvm-ranlib", "llvm-nm"}) {
      fs::create_symlink(llvm_bin / tool, dir / "bin" / tool);
    }
    env = std::make_unique<testing::ScopedEnv>("TVM_NDK_CC", cc.string());
    for (const char* name : {"add", "mul"}) {
      std::ofstream(dir / (std::string(name) + ".c"))
          << "int kiln_" << name << "(int a, int b) { return a " << (name[0] == 'a' ? '+' : '*')
          << " b; }\n";
      RunResult object =
          run({.argv = {cc.string(), "-c", "-fPIC", (dir / (std::string(name) + ".c")).string(),
                        "-o", (dir / (std::string(name) + ".o")).string()}});
      ASSERT_TRUE(object.ok()) << object.output;
    }
  }
  TempDirectory dir;
  fs::path cc;
  std::unique_ptr<testing::ScopedEnv> env;
};

std::uint16_t elf_machine(const fs::path& path) {
  std::string bytes = testing::read_file(path);
  std::uint16_t machine = 0;
  if (bytes.size() > 20) std::memcpy(&machine, bytes.data() + 18, 2);
  return machine;
}

TEST_F(Ndk, SharedLibraryForAArch64WithItsSymbolsAndTriple) {
  // -nostdlib and lld: options that need no Android sysroot.
  create_shared(dir / "libadd.so", {dir / "add.o", dir / "mul.o"},
                std::vector<std::string>{"-shared", "-fPIC", "-nostdlib", "-fuse-ld=lld"});
  EXPECT_EQ(elf_machine(dir / "libadd.so"), 183) << "EM_AARCH64";
  std::map<std::string, std::string> symbols = get_global_symbol_section_map(dir / "libadd.so");
  EXPECT_EQ(symbols["kiln_add"], "T");
  EXPECT_EQ(symbols["kiln_mul"], "T");
  EXPECT_EQ(get_target_triple(), "aarch64-unknown-linux-android24");
  EXPECT_STREQ(kSharedFormat, "so");
}

TEST_F(Ndk, DefaultOptionsAreTheSeeds) {
  try {
    create_shared(dir / "libdefault.so", {dir / "add.o"});
  } catch (const ToolFailed& e) {  // Debian's clang has no Android sysroot for -lm: fine, it ran
    EXPECT_NE(e.command_line().find("add.o -shared -fPIC -lm"), std::string::npos)
        << e.command_line();
    return;
  }
  EXPECT_EQ(elf_machine(dir / "libdefault.so"), 183);
}

TEST_F(Ndk, StaticLibraryFromObjectsAndATarWithAnIndex) {
  tar(dir / "objects.tar", {dir / "mul.o"});
  create_staticlib(dir / "libkiln.a", {dir / "add.o", dir / "objects.tar"});
  RunResult index = run({.argv = {(dir / "bin" / "llvm-nm").string(), "--print-armap",
                                  (dir / "libkiln.a").string()}});
  ASSERT_TRUE(index.ok()) << index.output;
  EXPECT_NE(index.output.find("Archive map"), std::string::npos) << index.output;
  EXPECT_NE(index.output.find("kiln_add in add.o"), std::string::npos) << index.output;
  EXPECT_NE(index.output.find("kiln_mul in mul.o"), std::string::npos) << index.output;
  std::map<std::string, std::string> symbols = get_global_symbol_section_map(dir / "libkiln.a");
  EXPECT_EQ(symbols["kiln_mul"], "T");
  EXPECT_STREQ(kStaticFormat, "a");
  EXPECT_THROW(create_staticlib(dir / "libbad.a", {dir / "missing.o"}), ToolFailed);
  EXPECT_FALSE(fs::exists(dir / "libbad.a")) << "no partial output";
}

TEST(NdkWithoutCompiler, TheSeedsErrorWhenTvmNdkCcIsUnset) {
  testing::ScopedEnv unset("TVM_NDK_CC", std::nullopt);
  try {
    create_shared("libx.so", {"x.o"});
    FAIL();
  } catch (const ToolNotFound& e) {  // no compiler to run: not a failure of one that ran
    EXPECT_EQ(e.tool(), "TVM_NDK_CC");
    EXPECT_NE(std::string(e.what()).find("Require environment variable TVM_NDK_CC"),
              std::string::npos);
  }
  EXPECT_THROW(create_staticlib("libx.a", {"x.o"}), ToolNotFound);
}

}  // namespace
}  // namespace kiln::ndk
