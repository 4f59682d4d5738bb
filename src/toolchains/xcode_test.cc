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
  ASSERT_EQ(c[0].size(), 10u);
  EXPECT_EQ(Args(c[0].begin(), c[0].begin() + 7),
            (Args{"-sdk", "iphoneos", "metal", "-std=ios-metal2.3", "-mios-version-min=13.0", "-O3",
                  "-c"}));
  EXPECT_TRUE(c[0][7].ends_with("my_lib.metal"));
  EXPECT_EQ(c[0][8], "-o");
  EXPECT_TRUE(c[0][9].ends_with("my_lib.air"));
  EXPECT_EQ(Args(c[1].begin(), c[1].begin() + 3), (Args{"-sdk", "iphoneos", "metallib"}));
  compile_metal("kernel void k() {}");
  EXPECT_EQ(calls()[2][3], "-std=macos-metal2.3");
  EXPECT_EQ(calls()[2][4], "-O3") << "no version flag for macOS unless one is given";
}

TEST_F(XcodeWithAStandInXcrun, MetalTakesAMinimumOsVersion) {
  compile_metal("kernel void k() {}", {}, "iphonesimulator", "15.0");
  compile_metal("kernel void k() {}", {}, "macosx", "12.0");
  auto c = calls();
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(Args(c[0].begin(), c[0].begin() + 6),
            (Args{"-sdk", "iphonesimulator", "metal", "-std=ios-metal2.3", "-mios-version-min=15.0",
                  "-O3"}));
  EXPECT_EQ(
      Args(c[2].begin(), c[2].begin() + 6),
      (Args{"-sdk", "macosx", "metal", "-std=macos-metal2.3", "-mmacosx-version-min=12.0", "-O3"}));
  EXPECT_THROW(compile_metal("kernel void k() {}", {}, "watchos"), InvalidArgument);
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

// Protobuf wire format, enough to write a Core ML Model by hand (the fields of Model.proto).
std::string varint(std::uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
  out.push_back(static_cast<char>(v));
  return out;
}
std::string message_field(std::uint32_t number, const std::string& payload) {
  return varint((number << 3) | 2) + varint(payload.size()) + payload;
}
std::string varint_field(std::uint32_t number, std::uint64_t value) {
  return varint(number << 3) + varint(value);
}
// A FeatureDescription: name (1), shortDescription (2), type (3: a multiArrayType (5)).
std::string feature(const std::string& name) {
  return message_field(1, name) + message_field(2, "about " + name) +
         message_field(3, message_field(5, varint_field(2, 65568)));
}
// A Model: specificationVersion (1), description (2: inputs (1), outputs (10), metadata (100)),
// and a neuralNetwork (500) the edit must keep as it is.
std::string model(const std::string& metadata) {
  std::string description = message_field(1, feature("x")) + message_field(1, feature("y")) +
                            message_field(10, feature("out"));
  if (!metadata.empty()) description += message_field(100, metadata);
  return varint_field(1, 4) + message_field(2, description) + message_field(500, "layers");
}

TEST(CoremlModel, TheInputAndOutputNamesGoIntoTheShortDescription) {
  const std::string names = R"({"inputs": ["x", "y"], "outputs": ["out"]})";
  std::string old_metadata = message_field(1, "old words") + message_field(3, "an author");
  std::string edited = with_io_description(model(old_metadata));
  EXPECT_EQ(coreml_io_description(edited), names);
  EXPECT_EQ(edited, model(message_field(1, names) + message_field(3, "an author")))
      << "every other field kept, in its place";
  EXPECT_EQ(with_io_description(model("")), model(message_field(1, names)))
      << "metadata added where there was none";
  EXPECT_EQ(with_io_description(edited), edited) << "the edit is idempotent";
}

TEST(CoremlModel, NamesAreJsonAsPythonWritesIt) {
  std::string description = message_field(1, feature("caf\xc3\xa9 \"q\"\\\t")) +
                            message_field(10, feature("\xf0\x9f\x98\x80"));
  std::string m = message_field(2, description);
  EXPECT_EQ(coreml_io_description(m),
            R"({"inputs": ["caf\u00e9 \"q\"\\\t"], "outputs": ["\ud83d\ude00"]})");
  EXPECT_EQ(coreml_io_description(""), R"({"inputs": [], "outputs": []})");
  EXPECT_THROW(coreml_io_description(message_field(2, message_field(1, feature("\xff")))),
               InvalidArgument);
  EXPECT_THROW(with_io_description(model("").substr(0, 10)), InvalidArgument) << "truncated";
  EXPECT_THROW(with_io_description("\x0b"), InvalidArgument) << "a group";
}

std::string from_hex(std::string_view hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return bytes;
}

// A model saved by coremltools 9.0 (NeuralNetworkBuilder: inputs "data" and `café "q"`, output
// "out😀", an author and an old short description), and the same model after the seed's own edit
// (`model.short_description = json.dumps(...)`; `model.save(...)`) by coremltools: kiln's edit
// gives the same bytes.
TEST(CoremlModel, TheSameBytesAsCoremltoolsGives) {
  std::string saved = from_hex(
      "0801125a0a110a04646174611a092a070a010310c080040a160a09636166c3a9202271221a092a070a010310"
      "c0800452140a076f7574f09f98801a092a070a010310c08004a206160a096f6c6420776f7264731a096b696c"
      "6e2074657374a21f240a220a036164641204646174611209636166c3a9202271221a076f7574f09f9880b20e"
      "00");
  std::string by_coremltools = from_hex(
      "08011298010a110a04646174611a092a070a010310c080040a160a09636166c3a9202271221a092a070a0103"
      "10c0800452140a076f7574f09f98801a092a070a010310c08004a206540a477b22696e70757473223a205b22"
      "64617461222c20226361665c7530306539205c22715c22225d2c20226f757470757473223a205b226f75745c"
      "75643833645c7564653030225d7d1a096b696c6e2074657374a21f240a220a03616464120464617461120963"
      "6166c3a9202271221a076f7574f09f9880b20e00");
  EXPECT_EQ(with_io_description(saved), by_coremltools);
  EXPECT_EQ(coreml_io_description(saved),
            R"({"inputs": ["data", "caf\u00e9 \"q\""], "outputs": ["out\ud83d\ude00"]})");
}

TEST_F(XcodeWithAStandInXcrun, CoremlSavesTheDescribedModelAndCompilesIt) {
  std::ofstream(dir / "model.mlmodel", std::ios::binary) << model("");
  fs::create_directory(dir / "out");
  fs::path compiled = compile_coreml(dir / "model.mlmodel", "main", dir / "out");
  EXPECT_EQ(compiled, dir / "out" / "main.mlmodelc");
  EXPECT_EQ(calls().back(), (Args{"coremlcompiler", "compile", (dir / "out/main.mlmodel").string(),
                                  (dir / "out").string()}));
  EXPECT_EQ(testing::read_file(dir / "out/main.mlmodel"), with_io_description(model("")));
  EXPECT_EQ(testing::read_file(dir / "model.mlmodel"), model("")) << "the input is left alone";
  EXPECT_THROW(compile_coreml(dir / "missing.mlmodel"), FileNotFound);
  EXPECT_THROW(compile_coreml(dir / "model.mlmodel", "other", dir / "out"), FileNotFound);
  EXPECT_STREQ(kDylibOutputFormat, "dylib");
}

}  // namespace
}  // namespace kiln::xcode
