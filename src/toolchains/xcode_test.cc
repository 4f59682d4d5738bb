// Xcode cannot run on Linux: these tests put a stand-in `xcrun` (and a stand-in clang) first on
// PATH. The stand-ins record their argv, one argument per line, and write the files the real
// tools would; the tests check the exact command lines.
#include "kiln/xcode.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln::xcode {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;

constexpr const char* kXcrun = R"(#!/bin/sh
# Stand-in for Apple's xcrun (test fixture): records argv, writes what the real tool would.
for a in "$@"; do printf '%s\n' "$a" >> "$KILN_STANDIN_LOG"; done
printf '%s\n' '--end--' >> "$KILN_STANDIN_LOG"
if [ -n "$KILN_XCRUN_FAIL" ]; then echo "error: stand-in failure: $KILN_XCRUN_FAIL" >&2; exit 1; fi
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
case "$3 $4" in
  "-find clang") echo "$KILN_STANDIN_DIR/clang"; exit 0 ;;
  "--show-sdk-path "*) echo "/Applications/Xcode.app/SDKs/My SDK.sdk"; exit 0 ;;
esac
case "$3" in
  metal) printf 'AIR' > "$out" ;;
  metallib) printf 'MTLB-stand-in' > "$out" ;;
esac
if [ "$1" = coremlcompiler ]; then mkdir -p "$4/main.mlmodelc"; fi
exit 0
)";

constexpr const char* kClang = R"(#!/bin/sh
# Stand-in for Xcode's clang (test fixture): records argv, writes the -o file.
printf '%s\n' 'clang' >> "$KILN_STANDIN_LOG"
for a in "$@"; do printf '%s\n' "$a" >> "$KILN_STANDIN_LOG"; done
printf '%s\n' '--end--' >> "$KILN_STANDIN_LOG"
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
printf 'DYLIB' > "$out"
)";

class XcodeWithAStandInXcrun : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directory(dir / "bin");
    for (auto [name, text] : {std::pair{"xcrun", kXcrun}, std::pair{"clang", kClang}}) {
      std::ofstream(dir / "bin" / name) << text;
      ::chmod((dir / "bin" / name).c_str(), 0755);
    }
    const char* old_path = std::getenv("PATH");
    path_ = std::make_unique<ScopedEnv>(
        "PATH", (dir / "bin").string() + ":" + (old_path != nullptr ? old_path : ""));
    log_ = std::make_unique<ScopedEnv>("KILN_STANDIN_LOG", (dir / "argv.log").string());
    standin_ = std::make_unique<ScopedEnv>("KILN_STANDIN_DIR", (dir / "bin").string());
  }

  // The recorded invocations, each a list of arguments.
  std::vector<std::vector<std::string>> calls() const {
    std::vector<std::vector<std::string>> all(1);
    std::istringstream lines(testing::read_file(dir / "argv.log"));
    for (std::string line; std::getline(lines, line);) {
      if (line == "--end--") {
        all.emplace_back();
      } else {
        all.back().push_back(line);
      }
    }
    all.pop_back();
    return all;
  }

  TempDirectory dir;
  std::unique_ptr<ScopedEnv> path_, log_, standin_;
};

using Args = std::vector<std::string>;

TEST_F(XcodeWithAStandInXcrun, DylibForIosWithHostilePathsUntouched) {
  fs::path object = dir / "it's a \"kernel\"; rm -rf ~.o";
  std::ofstream(object) << "object";
  fs::path output = dir / "lib my $(kernel).dylib";
  create_dylib(output, {object}, "arm64", "iphoneos");
  auto c = calls();
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], (Args{"-sdk", "iphoneos", "-find", "clang"}));
  EXPECT_EQ(c[1], (Args{"-sdk", "iphoneos", "--show-sdk-path"}));
  EXPECT_EQ(c[2], (Args{"clang", "-dynamiclib", "-arch", "arm64", "-isysroot",
                        "/Applications/Xcode.app/SDKs/My SDK.sdk", "-mios-version-min=13.0", "-o",
                        output.string(), object.string()}));
  EXPECT_EQ(testing::read_file(output), "DYLIB");
  EXPECT_FALSE(fs::exists(fs::path(std::getenv("HOME") ? std::getenv("HOME") : "/") / "~"));
}

TEST_F(XcodeWithAStandInXcrun, DylibForMacosAndUnsupportedSdks) {
  create_dylib(dir / "libk.dylib", {dir / "k.o"}, "x86_64", "macosx", "11.0");
  EXPECT_EQ(calls().back(),
            (Args{"clang", "-dynamiclib", "-arch", "x86_64", "-isysroot",
                  "/Applications/Xcode.app/SDKs/My SDK.sdk", "-mmacosx-version-min=11.0", "-o",
                  (dir / "libk.dylib").string(), (dir / "k.o").string()}));
  EXPECT_THROW(create_dylib(dir / "w.dylib", {}, "arm64", "watchos"), InvalidArgument);
}

TEST_F(XcodeWithAStandInXcrun, MetalIsTwoArgvCommandsNeverAShell) {
  fs::path target = dir / "out dir; echo pwned" / "lib \"metal\".metallib";
  fs::create_directories(target.parent_path());
  std::string bytes = compile_metal("kernel void k() {}", target, "iphoneos");
  EXPECT_EQ(bytes, "MTLB-stand-in");
  EXPECT_EQ(testing::read_file(target), "MTLB-stand-in");
  auto c = calls();
  ASSERT_EQ(c.size(), 2u);
  ASSERT_EQ(c[0].size(), 9u);
  EXPECT_EQ(Args(c[0].begin(), c[0].begin() + 6),
            (Args{"-sdk", "iphoneos", "metal", "-std=ios-metal2.3", "-O3", "-c"}));
  EXPECT_TRUE(c[0][6].ends_with("my_lib.metal"));
  EXPECT_EQ(c[0][7], "-o");
  EXPECT_TRUE(c[0][8].ends_with("my_lib.air"));
  EXPECT_EQ(Args(c[1].begin(), c[1].begin() + 3), (Args{"-sdk", "iphoneos", "metallib"}));
  compile_metal("kernel void k() {}");
  EXPECT_EQ(calls()[2][3], "-std=macos-metal2.3");
}

TEST_F(XcodeWithAStandInXcrun, AMetalFailureIsAnErrorWithTheOutput) {
  ScopedEnv fail("KILN_XCRUN_FAIL", "metal says no");
  try {
    compile_metal("kernel void k() { syntax error }");
    FAIL() << "expected ToolFailed";
  } catch (const ToolFailed& e) {
    EXPECT_NE(std::string(e.what()).find("stand-in failure: metal says no"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(xcrun({"--version"}), ToolFailed);
}

TEST_F(XcodeWithAStandInXcrun, CoremlCompilesAnExistingModel) {
  std::ofstream(dir / "model.mlmodel") << "model";
  fs::create_directory(dir / "out");
  fs::path compiled = compile_coreml(dir / "model.mlmodel", "main", dir / "out");
  EXPECT_EQ(compiled, dir / "out" / "main.mlmodelc");
  EXPECT_EQ(calls().back(), (Args{"coremlcompiler", "compile", (dir / "model.mlmodel").string(),
                                  (dir / "out").string()}));
  EXPECT_THROW(compile_coreml(dir / "missing.mlmodel"), FileNotFound);
  EXPECT_THROW(compile_coreml(dir / "model.mlmodel", "other", dir / "out"), FileNotFound);
}

}  // namespace
}  // namespace kiln::xcode
