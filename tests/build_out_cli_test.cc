// kiln build and the directory it writes into: an --out another user can write is refused unless
// --allow-shared-out says otherwise, and a symlink planted in --out never makes kiln write
// through it, whether the output is compiled or copied from the cache; and `kiln cache stats`
// counts the temporary files killed writers left in the cache until they are reaped.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <optional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_project.h"
#include "cli_support.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::kiln_cli;
using testing::read_file;

// One C object job, "a", its private cache, and an --out, in one temp directory.
class OutProject : public testing::BuildProject {
 public:
  OutProject() { manifest({{"jobs", {testing::c_job("a", "int a(void) { return 1; }\n")}}}); }
  std::string status_of_a() const { return result()["jobs"][0]["status"].get<std::string>(); }
};

TEST(BuildOutCli, AnOutOthersCanWriteIsRefusedUnlessAllowed) {
  OutProject project;
  fs::create_directory(project.out());
  ::chmod(project.out().c_str(), 0777);
  RunResult refused = project.build();
  EXPECT_EQ(refused.exit_code, 2) << refused.output << refused.error_output;
  EXPECT_NE(refused.error_output.find(project.out().string()), std::string::npos)
      << refused.error_output;
  EXPECT_NE(refused.error_output.find("writable by everyone (mode 0777)"), std::string::npos)
      << refused.error_output;
  EXPECT_NE(refused.error_output.find("--allow-shared-out"), std::string::npos)
      << refused.error_output;
  EXPECT_TRUE(fs::is_empty(project.out())) << "something was built into a refused --out";

  // Group-writable by a group that is not the user's own: refused too.
  ::chmod(project.out().c_str(), 0770);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(project.out().c_str(), 0, 65534), 0);
    RunResult group = project.build();
    EXPECT_EQ(group.exit_code, 2) << group.output << group.error_output;
    EXPECT_NE(group.error_output.find("writable by its group"), std::string::npos)
        << group.error_output;
  }

  ::chmod(project.out().c_str(), 0777);
  RunResult allowed = project.build({"--allow-shared-out"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output << allowed.error_output;
  EXPECT_TRUE(fs::is_regular_file(project.out() / "a.o"));

  RunResult help = kiln_cli({"build", "--help"});
  EXPECT_NE(help.output.find("--allow-shared-out"), std::string::npos) << help.output;
}

TEST(BuildOutCli, AnOutUnderADirectoryOthersCanWriteIsRefused) {
  OutProject project;
  fs::create_directory(project.path("shared"));
  ::chmod(project.path("shared").c_str(), 0777);
  RunResult refused = kiln_cli({"build", project.path("kiln.json").string(), "--out",
                                (project.path("shared") / "out").string(), "--no-cache"});
  EXPECT_EQ(refused.exit_code, 2) << refused.output << refused.error_output;
  EXPECT_NE(refused.error_output.find(project.path("shared").string() + " (above"),
            std::string::npos)
      << refused.error_output;
  ::chmod(project.path("shared").c_str(), 01777);  // sticky, like /tmp: nobody swaps out/
  RunResult sticky = kiln_cli({"build", project.path("kiln.json").string(), "--out",
                               (project.path("shared") / "out").string(), "--no-cache"});
  EXPECT_EQ(sticky.exit_code, 0) << sticky.output << sticky.error_output;
}

TEST(BuildOutCli, ASymlinkPlantedInOutIsNeverWrittenThrough) {
  OutProject project;
  fs::create_directory(project.out());
  std::ofstream(project.path("victim")) << "precious";
  auto plant = [&] {
    std::error_code ec;
    fs::remove(project.out() / "a.o", ec);
    fs::create_symlink(project.path("victim"), project.out() / "a.o");
    // The names earlier versions used beside an output.
    fs::create_symlink(project.path("victim"), project.out() / "a.o.kiln-tmp", ec);
  };
  plant();
  RunResult miss = project.build();
  ASSERT_EQ(miss.exit_code, 0) << miss.output << miss.error_output;
  EXPECT_EQ(project.status_of_a(), "done");
  EXPECT_EQ(read_file(project.path("victim")), "precious");
  EXPECT_FALSE(fs::is_symlink(project.out() / "a.o"));
  EXPECT_EQ(read_file(project.out() / "a.o").substr(1, 3), "ELF");

  plant();
  RunResult hit = project.build();
  ASSERT_EQ(hit.exit_code, 0) << hit.output << hit.error_output;
  EXPECT_EQ(project.status_of_a(), "cached");
  EXPECT_EQ(read_file(project.path("victim")), "precious");
  EXPECT_FALSE(fs::is_symlink(project.out() / "a.o"));
  EXPECT_EQ(read_file(project.out() / "a.o").substr(1, 3), "ELF");
}

TEST(CacheCli, StatsCountsTemporaryFilesAndStaleOnesAreReaped) {
  TempDirectory dir;
  fs::create_directory(dir / "cache", dir.path());
  ::chmod((dir / "cache").c_str(), 0700);
  std::map<std::string, std::optional<std::string>> env{
      {"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_NO_CACHE", std::nullopt}};
  std::ofstream(dir / "cache" / ".tmp.fresh") << std::string(1000, 'x');  // may still be written
  std::ofstream(dir / "cache" / ".kiln-tmp-2147483646-00") << std::string(5, 'x');  // no such pid
  RunResult stats = kiln_cli({"cache", "stats"}, env);
  ASSERT_EQ(stats.exit_code, 0) << stats.error_output;
  EXPECT_NE(stats.output.find("temporary  1 files, 1000 bytes"), std::string::npos) << stats.output;
  EXPECT_FALSE(fs::exists(dir / "cache" / ".kiln-tmp-2147483646-00"));
  EXPECT_TRUE(fs::exists(dir / "cache" / ".tmp.fresh"));
}

}  // namespace
}  // namespace kiln
