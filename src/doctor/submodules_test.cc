// The submodule check on a real superproject with two real submodules, made by the test.
#include <gtest/gtest.h>

#include <fstream>

#include <fmt/format.h>

#include "kiln/doctor.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"

namespace kiln::doctor {
namespace {

namespace fs = std::filesystem;

// `git -C dir args...` with a fixed identity; the output, trimmed. Local submodules need the
// file protocol, which git >= 2.38 allows only when asked.
std::string git(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> argv{"git",
                                "-c",
                                "user.name=kiln",
                                "-c",
                                "user.email=kiln@example.com",
                                "-c",
                                "protocol.file.allow=always",
                                "-c",
                                "init.defaultBranch=main",
                                "-C",
                                dir.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run({.argv = argv, .merge_stderr = false});
  EXPECT_TRUE(r.ok()) << r.command_line << ": " << r.error_output;
  std::string out = r.output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

fs::path make_repo(const fs::path& dir, const std::string& file) {
  fs::create_directories(dir);
  git(dir, {"init", "-q"});
  std::ofstream(dir / file) << "// " << file << "\n";
  git(dir, {"add", file});
  git(dir, {"commit", "-q", "-m", "first"});
  return dir;
}

class DoctorSubmodules : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      run({.argv = {"git", "--version"}});
    } catch (const CannotRunTool&) {
      GTEST_SKIP() << "git is not installed";
    }
    make_repo(temp_ / "dmlc-core", "dmlc.h");
    make_repo(temp_ / "rang", "rang.h");
    super_ = make_repo(temp_ / "tvm", "README");
    git(super_, {"submodule", "add", "-q", (temp_ / "dmlc-core").string(), "3rdparty/dmlc-core"});
    git(super_, {"submodule", "add", "-q", (temp_ / "rang").string(), "3rdparty/rang"});
    git(super_, {"commit", "-q", "-m", "submodules"});
  }
  TempDirectory temp_;
  fs::path super_;
};

TEST_F(DoctorSubmodules, AllInOrderPass) {
  std::vector<Finding> findings = check_submodules(super_);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].status, Status::pass) << findings[0].finding;
  EXPECT_NE(findings[0].finding.find("all 2 submodules"), std::string::npos) << findings[0].finding;
}

TEST_F(DoctorSubmodules, AMovedHeadFailsWithTheThreeCommits) {
  fs::path rang = super_ / "3rdparty" / "rang";
  std::string recorded = git(rang, {"rev-parse", "HEAD"});
  std::ofstream(rang / "rang.h") << "// moved on\n";
  git(rang, {"commit", "-q", "-am", "moved"});
  std::string moved = git(rang, {"rev-parse", "HEAD"});
  std::string super = git(super_, {"rev-parse", "HEAD"});
  std::vector<Finding> findings = check_submodules(super_);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.status, Status::fail);
  EXPECT_NE(f.finding.find("3rdparty/rang"), std::string::npos) << f.finding;
  EXPECT_NE(f.finding.find(recorded), std::string::npos) << f.finding;
  EXPECT_NE(f.finding.find(moved), std::string::npos) << f.finding;
  EXPECT_NE(f.finding.find(super), std::string::npos) << f.finding;
  EXPECT_NE(f.fix.find("git submodule sync --recursive && git submodule update --init --recursive"),
            std::string::npos)
      << f.fix;
}

TEST_F(DoctorSubmodules, UninitializedFail) {
  // A clone without --recursive: both submodules are recorded but not checked out.
  fs::path clone = temp_ / "clone";
  git(temp_.path(), {"clone", "-q", super_.string(), clone.string()});
  std::vector<Finding> findings = check_submodules(clone);
  ASSERT_EQ(findings.size(), 2u);
  for (const Finding& f : findings) {
    EXPECT_EQ(f.status, Status::fail);
    EXPECT_NE(f.finding.find("uninitialized"), std::string::npos) << f.finding;
  }
  EXPECT_NE(findings[0].finding.find("3rdparty/dmlc-core"), std::string::npos);
  EXPECT_NE(findings[1].finding.find("3rdparty/rang"), std::string::npos);
  // The fix the finding gives, run for real, puts everything in order.
  git(clone, {"submodule", "sync", "--recursive"});
  git(clone, {"submodule", "update", "--init", "--recursive"});
  EXPECT_EQ(check_submodules(clone)[0].status, Status::pass) << check_submodules(clone)[0].finding;
}

TEST_F(DoctorSubmodules, NotAGitCheckoutFails) {
  std::vector<Finding> findings = check_submodules(temp_ / "dmlc-core" / "nonexistent");
  EXPECT_EQ(findings[0].status, Status::fail);
  TempDirectory plain;
  findings = check_submodules(plain.path());
  EXPECT_EQ(findings[0].status, Status::fail);
  EXPECT_NE(findings[0].finding.find("not a git checkout"), std::string::npos)
      << findings[0].finding;
}

}  // namespace
}  // namespace kiln::doctor
