// The LLVM checks against real LLVM tools: this machine's, a PATH of symlinks to two LLVM majors,
// and a real llvm-config copied where its --includedir has no headers.
#include <gtest/gtest.h>

#include <fstream>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/doctor.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln::doctor {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;

std::optional<Finding> named(const std::vector<Finding>& findings, std::string_view check) {
  for (const Finding& f : findings) {
    if (f.check == check) return f;
  }
  return std::nullopt;
}

// The real files of LLVM `major`'s llvm-config, clang and ld.lld, or "" for one not installed.
struct LlvmTools {
  fs::path llvm_config, clang, lld;
  bool complete() const { return !llvm_config.empty() && !clang.empty() && !lld.empty(); }
};
LlvmTools tools_of(int major) {
  LlvmTools t;
  fs::path bin = fmt::format("/usr/lib/llvm-{}/bin", major);
  if (internal::is_file(bin / "llvm-config")) t.llvm_config = bin / "llvm-config";
  if (internal::is_file(bin / "clang")) t.clang = bin / "clang";
  if (internal::is_file(bin / "ld.lld")) t.lld = bin / "ld.lld";
  return t;
}

TEST(DoctorLlvm, ThisMachinesLlvmConfigOnPath) {
  std::vector<Finding> findings = check_llvm();
  std::optional<Finding> llvm = named(findings, "LLVM");
  ASSERT_TRUE(llvm);
  if (llvm->finding.starts_with("no llvm-config"))
    GTEST_SKIP() << "no LLVM here: " << llvm->finding;
  RunResult version = run({.argv = {"llvm-config", "--version"}});
  std::string text = version.output.substr(0, version.output.find('\n'));
  EXPECT_EQ(llvm->status, Status::pass) << llvm->finding;
  EXPECT_NE(llvm->finding.find("LLVM " + text), std::string::npos) << llvm->finding;
  EXPECT_NE(llvm->finding.find("first on PATH"), std::string::npos) << llvm->finding;
  ASSERT_TRUE(named(findings, "LLVM tools"));
  ASSERT_TRUE(named(findings, "LLVM installs"));
}

// The guide's ABI trap: clang from one LLVM, ld.lld and llvm-config from another.
TEST(DoctorLlvm, ToolsOfTwoMajorsOnPathFail) {
  LlvmTools llvm14 = tools_of(14);
  LlvmTools llvm15 = tools_of(15);
  if (llvm14.llvm_config.empty() || llvm15.clang.empty() || llvm14.lld.empty()) {
    GTEST_SKIP() << "needs llvm-config and ld.lld of LLVM 14 and clang of LLVM 15 "
                    "(scripts/install-deps.sh installs them)";
  }
  TempDirectory bin;
  fs::create_symlink(llvm14.llvm_config, bin / "llvm-config");
  fs::create_symlink(llvm15.clang, bin / "clang");
  fs::create_symlink(llvm14.lld, bin / "ld.lld");
  ScopedEnv path("PATH", fmt::format("{}:{}", bin.path().string(), std::getenv("PATH")));
  std::vector<Finding> findings = check_llvm();
  std::optional<Finding> tools = named(findings, "LLVM tools");
  ASSERT_TRUE(tools);
  EXPECT_EQ(tools->status, Status::fail) << tools->finding;
  EXPECT_NE(tools->finding.find((bin / "clang").string()), std::string::npos) << tools->finding;
  EXPECT_NE(tools->finding.find("is 15."), std::string::npos) << tools->finding;
  EXPECT_NE(tools->finding.find("is 14."), std::string::npos) << tools->finding;
  EXPECT_NE(tools->fix.find("/usr/lib/llvm-14/bin"), std::string::npos) << tools->fix;
  EXPECT_EQ(named(findings, "LLVM")->status, Status::pass) << named(findings, "LLVM")->finding;

  // One LLVM throughout: the same check passes.
  fs::remove(bin / "clang");
  if (llvm14.clang.empty()) return;
  fs::create_symlink(llvm14.clang, bin / "clang");
  tools = named(check_llvm(), "LLVM tools");
  EXPECT_EQ(tools->status, Status::pass) << tools->finding;
}

// A real llvm-config whose --includedir lacks llvm/IR/IRBuilder.h (the runtime package without
// -dev): llvm-config reports paths relative to its own location, so a copy of it is such a one.
TEST(DoctorLlvm, IncludeDirWithoutTheHeaderFails) {
  LlvmTools llvm14 = tools_of(14);
  if (llvm14.llvm_config.empty()) GTEST_SKIP() << "no /usr/lib/llvm-14/bin/llvm-config";
  TempDirectory prefix;
  fs::create_directories(prefix / "bin");
  fs::copy_file(llvm14.llvm_config, prefix / "bin" / "llvm-config");
  std::vector<Finding> findings = check_llvm(prefix / "bin" / "llvm-config");
  std::optional<Finding> llvm = named(findings, "LLVM");
  ASSERT_TRUE(llvm);
  EXPECT_EQ(llvm->status, Status::fail) << llvm->finding;
  EXPECT_NE(llvm->finding.find("llvm/IR/IRBuilder.h"), std::string::npos) << llvm->finding;
  EXPECT_NE(llvm->finding.find((prefix / "include").string()), std::string::npos) << llvm->finding;
  EXPECT_NE(llvm->fix.find("llvm-14-dev"), std::string::npos) << llvm->fix;
  // The copy is a second installation: several LLVMs -> WARN with the full-path advice.
  std::optional<Finding> installs = named(findings, "LLVM installs");
  ASSERT_TRUE(installs);
  EXPECT_EQ(installs->status, Status::warn) << installs->finding;
  EXPECT_NE(installs->finding.find(prefix.path().string()), std::string::npos) << installs->finding;
  EXPECT_NE(installs->fix.find("--link-static"), std::string::npos) << installs->fix;
}

TEST(DoctorLlvm, MissingOrOldLlvmConfigFails) {
  std::vector<Finding> findings = check_llvm("/nonexistent/llvm-config");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].status, Status::fail);
  EXPECT_NE(findings[0].finding.find("/nonexistent/llvm-config"), std::string::npos);
  // An LLVM 12 stands in as a program that prints what llvm-config 12 prints.
  TempDirectory prefix;
  fs::create_directories(prefix / "bin");
  fs::create_directories(prefix / "include" / "llvm" / "IR");
  std::ofstream(prefix / "include" / "llvm" / "IR" / "IRBuilder.h") << "\n";
  std::ofstream(prefix / "bin" / "llvm-config")
      << "#!/bin/sh\necho 12.0.1\necho " << (prefix / "include").string() << "\n";
  fs::permissions(prefix / "bin" / "llvm-config", fs::perms::owner_all);
  std::optional<Finding> llvm = named(check_llvm(prefix / "bin" / "llvm-config"), "LLVM");
  EXPECT_EQ(llvm->status, Status::fail) << llvm->finding;
  EXPECT_NE(llvm->finding.find("LLVM 12.0.1"), std::string::npos) << llvm->finding;
  EXPECT_NE(llvm->finding.find("14 or newer"), std::string::npos) << llvm->finding;
}

}  // namespace
}  // namespace kiln::doctor
