// End-to-end tests of `kiln cc` and `kiln clang`, with the real compilers.
#include <elf.h>

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "kiln/elf.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using kiln::testing::kiln_cli;

class CcCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(tmp_ / "add.c") << "int add(int a, int b) { return a + b; }\n";
    std::ofstream(tmp_ / "main.c")
        << "int add(int, int);\nint main(void) { return add(2, 3) - 5; }\n";
  }
  std::string path(const char* name) const { return (tmp_ / name).string(); }
  kiln::TempDirectory tmp_;
};

TEST_F(CcCli, SharedObjectExecutableAndStatic) {
  kiln::RunResult shared = kiln_cli(
      {"cc", "shared", "-o", path("libadd.so"), "--cc", "gcc", path("add.c"), "--", "-O2"});
  ASSERT_EQ(shared.exit_code, 0) << shared.error_output;
  kiln::RunResult object =
      kiln_cli({"cc", "object", "-o", path("add.o"), "--cc", "gcc", path("add.c")});
  ASSERT_EQ(object.exit_code, 0) << object.error_output;
  EXPECT_EQ(kiln::read_elf_machine(tmp_ / "add.o"), EM_X86_64);
  kiln::RunResult archive = kiln_cli({"cc", "static", "-o", path("libadd.a"), path("add.o")});
  ASSERT_EQ(archive.exit_code, 0) << archive.error_output;
  kiln::RunResult exe =
      kiln_cli({"cc", "exe", "-o", path("prog"), "--cc", "gcc", path("main.c"), path("libadd.a")});
  ASSERT_EQ(exe.exit_code, 0) << exe.error_output;
  EXPECT_TRUE(kiln::run({.argv = {path("prog")}}).ok());

  kiln::RunResult symbols = kiln_cli({"cc", "symbols", path("libadd.so"), "--json"});
  ASSERT_EQ(symbols.exit_code, 0) << symbols.error_output;
  EXPECT_EQ(nlohmann::json::parse(symbols.output).at("add"), "T");
  kiln::RunResult plain = kiln_cli({"cc", "symbols", path("libadd.so")});
  EXPECT_NE(plain.output.find("T add\n"), std::string::npos) << plain.output;
}

TEST_F(CcCli, TripleOfHostAndCrossTarget) {
  kiln::RunResult host = kiln_cli({"cc", "triple", "--cc", "gcc"});
  ASSERT_EQ(host.exit_code, 0) << host.error_output;
  EXPECT_TRUE(host.output.starts_with("x86_64")) << host.output;
  if (!kiln::which("clang")) GTEST_SKIP() << "clang is not installed";
  kiln::RunResult cross =
      kiln_cli({"cc", "triple", "--cc", "clang", "--", "--target=aarch64-linux-gnu"});
  ASSERT_EQ(cross.exit_code, 0) << cross.error_output;
  EXPECT_TRUE(cross.output.starts_with("aarch64")) << cross.output;
}

TEST_F(CcCli, TripleOfAMissingOrFailingCompilerExitsOneSayingSo) {
  for (const std::string& compiler : {path("no-such-cc"), std::string("false")}) {
    kiln::RunResult r = kiln_cli({"cc", "triple", "--cc", compiler});
    EXPECT_EQ(r.exit_code, 1) << compiler;
    EXPECT_EQ(r.error_output, "kiln: error: cannot tell the target triple of '" + compiler +
                                  "' (-dumpmachine failed)\n");
  }
}

TEST_F(CcCli, CompileErrorExitsOneWithTheWholeMessage) {
  std::ofstream(tmp_ / "bad.c") << "int f( {\n";
  kiln::RunResult r = kiln_cli({"cc", "object", "-o", path("bad.o"), "--cc", "gcc", path("bad.c")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.error_output.starts_with("kiln: error: Compilation error:\n")) << r.error_output;
  EXPECT_NE(r.error_output.find("Command line: gcc -c -o "), std::string::npos) << r.error_output;
}

// Options after -- precede the inputs (as tvm.support 0.27); --lib links a library after them.
TEST_F(CcCli, OptionsBeforeTheInputsAndLibrariesAfter) {
  std::ofstream(tmp_ / "root.c") << "#include <math.h>\n#include <stdio.h>\n"
                                    "int main(int argc, char** argv) { (void)argv; "
                                    "printf(\"%.0f\\n\", sqrt(9.0 * argc)); return 0; }\n";
  kiln::RunResult r = kiln_cli({"cc", "exe", "-o", path("root"), "--cc", "gcc", "--lib", "m",
                                path("root.c"), "--", "-x", "c"});
  ASSERT_EQ(r.exit_code, 0) << r.error_output;
  EXPECT_EQ(kiln::run({.argv = {path("root")}}).output, "3\n");
}

TEST_F(CcCli, BadUsageExitsTwo) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"cc"},
           {"cc", "shared", path("add.c")},  // no -o
           {"cc", "shared", "-o", path("x.so"), "--launcher", "make", path("add.c")},
           {"cc", "static", "-o", path("x.a"), path("add.c"), "--", "-O2"},  // static takes no --
           {"describe", "--", "-O2"}}) {
    kiln::RunResult r = kiln_cli(args);
    EXPECT_EQ(r.exit_code, 2) << kiln::format_command_line(args) << "\n" << r.error_output;
    EXPECT_TRUE(r.error_output.starts_with("kiln: error: ")) << r.error_output;
  }
}

TEST_F(CcCli, ClangEmitLlvmPrintsOrWrites) {
  if (!kiln::which("clang")) GTEST_SKIP() << "clang is not installed";
  kiln::RunResult printed = kiln_cli({"clang", "emit-llvm", path("add.c"), "--", "-O1"});
  ASSERT_EQ(printed.exit_code, 0) << printed.error_output;
  EXPECT_NE(printed.output.find("define"), std::string::npos);
  kiln::RunResult written =
      kiln_cli({"clang", "emit-llvm", "int two(void) { return 2; }", "-o", path("two.ll")});
  ASSERT_EQ(written.exit_code, 0) << written.error_output;
  EXPECT_EQ(written.output, "");
  EXPECT_TRUE(fs::exists(tmp_ / "two.ll"));
}

}  // namespace
