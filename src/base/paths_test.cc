#include "kiln/paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

void make_file(const fs::path& p, mode_t mode) {
  std::ofstream(p) << "#!/bin/true\n";
  ::chmod(p.c_str(), mode);
}

TEST(Which, HeaderExample) {
  auto sh = which("sh");
  ASSERT_TRUE(sh.has_value());
  EXPECT_EQ(*sh, fs::path("/bin/sh")) << "/bin comes before PATH";
}

TEST(Which, SearchesPathInOrderAndSkipsNonExecutables) {
  TempDirectory a, b;
  make_file(a / "kiln-tool", 0644);  // not executable: skipped
  make_file(b / "kiln-tool", 0755);
  fs::create_directory(a / "kiln-dir-tool");  // a directory: skipped
  testing::ScopedEnv path("PATH", a.path().string() + ":" + b.path().string());
  EXPECT_EQ(which("kiln-tool"), b / "kiln-tool");
  EXPECT_FALSE(which("kiln-dir-tool").has_value());
  EXPECT_FALSE(which("kiln-absent-tool").has_value());
  EXPECT_FALSE(which("").has_value());
}

TEST(Which, AcceptsAPathToAnExecutable) {
  TempDirectory a;
  make_file(a / "tool", 0755);
  EXPECT_EQ(which((a / "tool").string()), a / "tool");
}

// What run() starts, which a cache key must name: PATH's first hit, never ./name or /bin/name
// first as which() has it for the seed.
TEST(ProgramPath, IsWhatRunStartsNotTheSeedsOrder) {
  TempDirectory cwd, a, b;
  make_file(cwd / "kiln-tool", 0755);  // ./kiln-tool: not run for a bare name
  make_file(a / "kiln-tool", 0755);
  make_file(b / "kiln-tool", 0755);
  testing::ScopedEnv path("PATH", a.path().string() + ":" + b.path().string());
  EXPECT_EQ(program_path({.argv = {"kiln-tool"}, .cwd = cwd.path()}), a / "kiln-tool");
  EXPECT_EQ(program_path({.argv = {"kiln-tool"}, .env = {{"PATH", b.path().string()}}}),
            b / "kiln-tool");
  fs::path relative = program_path({.argv = {"./kiln-tool"}, .cwd = cwd.path()});
  EXPECT_TRUE(relative.is_absolute()) << relative;
  EXPECT_TRUE(fs::equivalent(relative, cwd / "kiln-tool")) << relative;
  EXPECT_THROW(program_path({.argv = {"kiln-absent-tool"}}), ToolNotFound);
  // A hit passed over (a launcher's masquerade link) gives the next.
  auto is_a = [&](const fs::path& p) { return p.parent_path() == a.path(); };
  EXPECT_EQ(program_path({.argv = {"kiln-tool"}}, is_a), b / "kiln-tool");
}

TEST(IsSourcePath, SeedRules) {
  TempDirectory dir;
  make_file(dir / "no_extension", 0644);
  EXPECT_TRUE(is_source_path((dir / "no_extension").string())) << "an existing file";
  EXPECT_TRUE(is_source_path("kernel.cu"));
  EXPECT_TRUE(is_source_path("a.b.c"));
  EXPECT_TRUE(is_source_path("trailing."));  // empty extension: nothing to strip
  EXPECT_FALSE(is_source_path("Makefile"));  // no extension
  EXPECT_FALSE(is_source_path("int main() { return 0; }\n"));
  EXPECT_FALSE(is_source_path("x.c\n"));
  EXPECT_FALSE(is_source_path("x. c"));  // whitespace before the extension
  EXPECT_FALSE(is_source_path("x.c "));  // whitespace after it
  EXPECT_FALSE(is_source_path("float f = 1.0; return f * 2.0 "));
  EXPECT_FALSE(is_source_path(""));
}

}  // namespace
}  // namespace kiln
