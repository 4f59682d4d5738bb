#include "kiln/doctor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/findings.h"
#include "testing/test_support.h"

#include <fmt/format.h>

namespace kiln::doctor {
namespace {

namespace fs = std::filesystem;
using testing::finding_named;
using testing::ScopedEnv;

TEST(Doctor, ParseVersion) {
  EXPECT_EQ(parse_version("cmake version 3.22.1"), (std::vector<int>{3, 22, 1}));
  EXPECT_EQ(parse_version("Python 3.11"), (std::vector<int>{3, 11, 0}));
  EXPECT_TRUE(parse_version("no digits").empty());
}

// The first line of `tool --version`, "" when the tool is absent.
std::string version_line(const std::string& tool) {
  try {
    RunResult r = run({.argv = {tool, "--version"}});
    return r.ok() ? r.output.substr(0, r.output.find('\n')) : "";
  } catch (const CannotRunTool&) {
    return "";
  }
}

// This machine: the real versions of the compiler, cmake, LLVM and CUDA, in a fixed order.
TEST(Doctor, ThisMachine) {
  auto start = std::chrono::steady_clock::now();
  std::vector<Finding> findings = run_checks();
  std::printf("run_checks() took %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::vector<std::string> order;
  for (const Finding& f : findings) {
    // "TVM libraries" and one "TVM <library>" each come only when python3 imports a tvm.
    if (f.check.starts_with("TVM ")) continue;
    if (order.empty() || order.back() != f.check) order.push_back(f.check);
  }
  std::vector<std::string> expected{
      "C++ compiler", "CMake",         "LLVM",       "LLVM tools",       "LLVM installs",
      "CUDA",         "Python",        "Python TVM", "TVM_LIBRARY_PATH", "TVM_HOME",
      "Conda LLVM",   "Parallel jobs", "ccache"};
  if (finding_named(findings, "LLVM").finding.starts_with("no llvm-config")) {
    expected.erase(expected.begin() + 3, expected.begin() + 5);
  }
  EXPECT_EQ(order, expected);

  const Finding& cxx = finding_named(findings, "C++ compiler");
  EXPECT_EQ(cxx.status, Status::pass) << cxx.finding;
  std::string compiler = cxx.finding.substr(0, cxx.finding.find(':'));
  EXPECT_NE(cxx.finding.find(version_line(compiler)), std::string::npos) << cxx.finding;

  std::vector<int> cmake = parse_version(version_line("cmake"));
  EXPECT_NE(finding_named(findings, "CMake")
                .finding.find(fmt::format("cmake {}.{}.{}", cmake[0], cmake[1], cmake[2])),
            std::string::npos);

  if (std::string llvm = version_line("llvm-config"); !llvm.empty()) {
    const Finding& f = finding_named(findings, "LLVM");
    EXPECT_NE(f.finding.find("LLVM " + llvm), std::string::npos) << f.finding;
  }
  if (std::string nvcc = version_line("nvcc"); !nvcc.empty()) {
    RunResult r = run({.argv = {"nvcc", "--version"}});
    size_t at = r.output.find("release ");
    ASSERT_NE(at, std::string::npos) << r.output;
    std::string release = r.output.substr(at + 8, r.output.find(',', at) - at - 8);  // "13.0"
    const Finding& f = finding_named(findings, "CUDA");
    EXPECT_NE(f.finding.find("CUDA " + release), std::string::npos) << f.finding;
  }
  EXPECT_NE(finding_named(findings, "Parallel jobs").finding.find("-j"), std::string::npos);
  for (const Finding& f : findings) {
    EXPECT_FALSE(f.finding.empty()) << f.check;
    if (f.status != Status::pass) {
      EXPECT_FALSE(f.fix.empty()) << f.check << " says no fix";
    }
  }
}

// Fake tools on PATH are real programs here (scripts that print a version), not mocks of kiln.
TEST(Doctor, OldAndBuggyCmakeAndOldPython) {
  TempDirectory bin;
  auto tool = [&](const std::string& name, const std::string& version_line) {
    std::ofstream(bin / name) << "#!/bin/sh\necho '" << version_line << "'\n";
    fs::permissions(bin / name, fs::perms::owner_all);
  };
  tool("cmake", "cmake version 3.16.3");
  tool("python3", "Python 3.6.9");
  {
    ScopedEnv path("PATH", bin.path().string());
    Finding cmake = check_cmake();
    EXPECT_EQ(cmake.status, Status::fail) << cmake.finding;
    EXPECT_NE(cmake.finding.find("3.18"), std::string::npos);
    Finding python = check_python();
    EXPECT_EQ(python.status, Status::warn);
    EXPECT_NE(python.finding.find("3.6.9"), std::string::npos);
  }
  tool("cmake", "cmake version 3.22.1");
  ScopedEnv path("PATH", bin.path().string());
  Finding cmake = check_cmake();
  EXPECT_EQ(cmake.status, Status::warn);
  EXPECT_NE(cmake.finding.find("llvm-config"), std::string::npos) << cmake.finding;
  fs::remove(bin / "cmake");
  EXPECT_EQ(check_cmake().status, Status::fail);
}

TEST(Doctor, ABrokenCompilerFails) {
  TempDirectory bin;
  std::ofstream(bin / "broken-c++") << "#!/bin/sh\necho 'broken 1.0'\nexit 1\n";
  fs::permissions(bin / "broken-c++", fs::perms::owner_all);
  ScopedEnv cxx("CXX", (bin / "broken-c++").string());
  Finding f = check_cxx_compiler();
  EXPECT_EQ(f.status, Status::fail);
  EXPECT_NE(f.finding.find("std::optional"), std::string::npos) << f.finding;
}

}  // namespace
}  // namespace kiln::doctor
