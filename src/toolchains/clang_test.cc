#include "kiln/clang.h"

#include <fstream>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/temp_directory.h"

namespace kiln::clang {
namespace {

namespace fs = std::filesystem;

class Clang : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!which("clang")) GTEST_SKIP() << "clang is not installed (scripts/install-deps.sh)";
  }
};

TEST_F(Clang, FindClangListsVersionedNamesFirst) {
  std::vector<std::string> found = find_clang({.llvm_major = 14});
  ASSERT_FALSE(found.empty());
  if (which("clang-14")) {
    EXPECT_EQ(fs::path(found.front()).filename(), "clang-14");
  }
  EXPECT_EQ(fs::path(found.back()).filename(), "clang");
}

TEST_F(Clang, FindClangRequiredListsWhatItTried) {
  EXPECT_TRUE(find_clang({.required = false, .llvm_major = 999}).size() >= 1u);
  const char* old = std::getenv("PATH");
  std::string saved = old ? old : "";
  ::setenv("PATH", "/nonexistent", 1);
  std::vector<std::string> none;
  std::string message;
  try {
    none = find_clang({.required = false, .llvm_major = 999});
    find_clang({.required = true, .llvm_major = 999});
  } catch (const ToolNotFound& e) {
    message = e.what();
  }
  ::setenv("PATH", saved.c_str(), 1);
  if (which("/bin/clang")) GTEST_SKIP() << "clang lives in /bin, which is always searched";
  EXPECT_TRUE(none.empty());
  EXPECT_NE(message.find("clang-999.0, clang-999, clang, clang.exe"), std::string::npos) << message;
}

TEST_F(Clang, InlineSourceToIr) {
  std::string ir = create_llvm({"int add(int a, int b) { return a + b; }"}, {.options = {"-O1"}});
  EXPECT_NE(ir.find("define"), std::string::npos) << ir;
  EXPECT_NE(ir.find("add"), std::string::npos);
  EXPECT_NE(ir.find("target triple"), std::string::npos);
}

TEST_F(Clang, FileInputAndOutputFile) {
  TempDirectory tmp;
  std::ofstream(tmp / "mul.c") << "int mul(int a, int b) { return a * b; }\n";
  fs::path out = tmp / "mul.ll";
  std::string ir = create_llvm({(tmp / "mul.c").string()}, {.output = out, .options = {"-O2"}});
  EXPECT_TRUE(fs::exists(out));
  EXPECT_NE(ir.find("@mul"), std::string::npos) << ir;
  std::ifstream in(out);
  std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(written, ir) << "the returned IR is the file's";
}

TEST_F(Clang, CompileErrorIsToolFailed) {
  try {
    create_llvm({"int broken( {"});
    FAIL();
  } catch (const ToolFailed& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("Compilation error:\n")) << e.what();
    EXPECT_NE(std::string(e.what()).find("input0.cc"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::clang
