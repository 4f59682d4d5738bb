// kiln doctor, run as a user would: the table and --json hold the same findings; exit codes.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "kiln/temp_directory.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::kiln_cli;

TEST(DoctorCli, TableAndJsonAgree) {
  RunResult table = kiln_cli({"doctor"});
  RunResult json = kiln_cli({"doctor", "--json"});
  EXPECT_EQ(table.exit_code, json.exit_code);
  nlohmann::json list = nlohmann::json::parse(json.output);
  ASSERT_TRUE(list.is_array());
  ASSERT_GE(list.size(), 5u);
  bool failed = false;
  for (const auto& f : list) {
    // Two runs: the same checks with the same statuses (the memory figure may move a little).
    std::string check = f["check"].get<std::string>();
    size_t at = table.output.find(check);
    ASSERT_NE(at, std::string::npos) << check;
    std::string line = table.output.substr(at, table.output.find('\n', at) - at);
    EXPECT_NE(line.find(f["status"].get<std::string>()), std::string::npos) << line;
    failed = failed || f["status"] == "FAIL";
  }
  EXPECT_EQ(json.exit_code, failed ? 1 : 0);
  EXPECT_EQ(table.output.find("\x1b["), std::string::npos) << "no colour when not a terminal";
}

TEST(DoctorCli, AFailureMeansExitOne) {
  TempDirectory bin;  // a PATH with no cmake: the CMake check FAILs
  RunResult r = kiln_cli({"doctor", "--json"}, {{"PATH", bin.path().string()}});
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  nlohmann::json list = nlohmann::json::parse(r.output);
  bool cmake_failed = false;
  for (const auto& f : list)
    cmake_failed = cmake_failed || (f["check"] == "CMake" && f["status"] == "FAIL");
  EXPECT_TRUE(cmake_failed);
}

}  // namespace
}  // namespace kiln
