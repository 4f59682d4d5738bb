// End-to-end tests of the `kiln` binary: exit statuses, --help, --version, describe.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "kiln/process.h"

namespace {

using namespace std::chrono_literals;

using kiln::testing::kiln_cli;

TEST(Cli, VersionNamesVersionAndCommit) {
  kiln::RunResult r = kiln_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.output.starts_with("kiln 0.")) << r.output;
  EXPECT_NE(r.output.find("(git "), std::string::npos);
}

TEST(Cli, HelpForTheToolAndForEachSubcommand) {
  kiln::RunResult top = kiln_cli({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.output.find("describe"), std::string::npos) << top.output;
  kiln::RunResult sub = kiln_cli({"describe", "--help"});
  EXPECT_EQ(sub.exit_code, 0);
  EXPECT_NE(sub.output.find("--json"), std::string::npos) << sub.output;
}

TEST(Cli, DescribePrintsVersionPlatformAndOptions) {
  kiln::RunResult r = kiln_cli({"describe"});
  ASSERT_EQ(r.exit_code, 0) << r.error_output;
  EXPECT_TRUE(r.output.starts_with("kiln version ")) << r.output;
  EXPECT_NE(r.output.find("\nuname: Linux "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\nOptions:\n{\n  \""), std::string::npos) << r.output;
  EXPECT_EQ(r.error_output, "");
}

TEST(Cli, DescribeJsonIsOneObjectWithTvmOverrides) {
  kiln::RunResult r =
      kiln_cli({"describe", "--json"}, {{"TVM_USE_CUDA", "OFF"}, {"TVM_USE_NCCL", "ON"}});
  ASSERT_EQ(r.exit_code, 0) << r.error_output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("options").at("USE_CUDA"), "OFF");
  EXPECT_EQ(j.at("options").at("USE_NCCL"), "ON");
  EXPECT_EQ(j.at("platform").at("sysname"), "Linux");
}

TEST(Cli, BadUsageExitsTwoWithAKilnError) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {}, {"frobnicate"}, {"describe", "--bogus"}, {"describe", "extra"}}) {
    kiln::RunResult r = kiln_cli(args);
    EXPECT_EQ(r.exit_code, 2) << kiln::format_command_line(args);
    EXPECT_TRUE(r.error_output.starts_with("kiln: error: ")) << r.error_output;
    EXPECT_EQ(r.output, "");
  }
}

}  // namespace
