#include "kiln/doctor.h"

#include <gtest/gtest.h>

#include <fstream>

#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

#include <fmt/format.h>

namespace kiln::doctor {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;

TEST(Doctor, RecommendedJobsFollowTheGuide) {
  constexpr unsigned long long kGiB = 1ULL << 30;
  EXPECT_EQ(recommended_jobs(64, 488 * kGiB), 64);  // the guide's machine: memory allows 162
  EXPECT_EQ(recommended_jobs(64, 30 * kGiB), 10);
  EXPECT_EQ(recommended_jobs(8, 2 * kGiB), 1) << "never below one";
  EXPECT_EQ(parse_version("cmake version 3.22.1"), (std::vector<int>{3, 22, 1}));
  EXPECT_EQ(parse_version("Python 3.11"), (std::vector<int>{3, 11, 0}));
  EXPECT_TRUE(parse_version("no digits").empty());
}

// This machine: real versions, all checks in a fixed order.
TEST(Doctor, ThisMachine) {
  std::vector<Finding> findings = run_checks();
  ASSERT_EQ(findings.size(), 5u);
  EXPECT_EQ(findings[0].check, "C++ compiler");
  EXPECT_EQ(findings[0].status, Status::pass) << findings[0].finding;
  RunResult cmake = run({.argv = {"cmake", "--version"}});
  std::vector<int> v = parse_version(cmake.output);
  EXPECT_NE(findings[1].finding.find(fmt::format("cmake {}.{}.{}", v[0], v[1], v[2])),
            std::string::npos)
      << findings[1].finding;
  EXPECT_NE(findings[3].finding.find("-j"), std::string::npos);
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
