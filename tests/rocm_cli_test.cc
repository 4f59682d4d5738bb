// kiln rocm, run as a user would.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "kiln/paths.h"
#include "kiln/rocm.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

using testing::kiln_cli;

TEST(RocmCli, ArchSaysWhyItIsTheDefault) {
  RunResult r = kiln_cli({"rocm", "arch"}, {{"ROCM_PATH", "/nonexistent/rocm"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "gfx900\n");
  EXPECT_NE(r.error_output.find("ROCm not detected"), std::string::npos) << r.error_output;
}

TEST(RocmCli, BitcodeListsTheLibrariesOrSaysWhichIsMissing) {
  TempDirectory empty;
  RunResult missing = kiln_cli({"rocm", "bitcode", "--dir", empty.path().string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.error_output.find("could not find bitcode"), std::string::npos);
  try {
    rocm::callback_rocm_bitcode_path();
  } catch (const Error& e) {
    GTEST_SKIP() << "no device libraries here: " << e.what();
  }
  RunResult r = kiln_cli({"rocm", "bitcode", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.error_output;
  nlohmann::json list = nlohmann::json::parse(r.output);
  ASSERT_TRUE(list.is_array());
  EXPECT_GE(list.size(), 14u);
}

TEST(RocmCli, LinkMakesACodeObjectOrFailsWithTheLinkersMessage) {
  auto clang = which("clang-15");
  auto lld = which("ld.lld-15");
  if (!clang || !lld) GTEST_SKIP() << "needs clang-15 and ld.lld-15 (scripts/install-deps.sh)";
  TempDirectory dir;
  std::ofstream(dir / "ok.cl") << "__kernel void k(__global int* a) { a[0] = 1; }\n";
  std::ofstream(dir / "bad.cl") << "void kiln_gone(void);\n__kernel void k() { kiln_gone(); }\n";
  for (const char* name : {"ok", "bad"}) {
    RunResult c =
        run({.argv = {clang->string(), "-x", "cl", "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx900",
                      "-nogpulib", "-c", (dir / (std::string(name) + ".cl")).string(), "-o",
                      (dir / (std::string(name) + ".o")).string()}});
    ASSERT_TRUE(c.ok()) << c.output;
  }
  RunResult ok = kiln_cli({"rocm", "link", (dir / "ok.o").string(), "-o", (dir / "ok.co").string(),
                           "--lld", lld->string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.error_output;
  EXPECT_EQ(testing::read_file(dir / "ok.co").substr(0, 4),
            "\x7f"
            "ELF");
  RunResult bad = kiln_cli({"rocm", "link", (dir / "bad.o").string(), "-o",
                            (dir / "bad.co").string(), "--lld", lld->string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.error_output.find("kiln_gone"), std::string::npos) << bad.error_output;
}

}  // namespace
}  // namespace kiln
