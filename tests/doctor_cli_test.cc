// kiln doctor, run as a user would: the table and --json hold the same findings; exit codes.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "kiln/temp_directory.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::kiln_cli;

struct Row {
  std::string check, status, finding;
};

// The table's rows: "<check padded>  <STATUS>  <finding>", fix lines indented below.
std::vector<Row> table_rows(const std::string& table) {
  std::vector<Row> rows;
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == ' ') continue;
    for (const char* status : {"  PASS  ", "  WARN  ", "  FAIL  "}) {
      size_t at = line.find(status);
      if (at == std::string::npos) continue;
      std::string check = line.substr(0, at);
      check.erase(check.find_last_not_of(' ') + 1);
      rows.push_back({check, std::string(status).substr(2, 4), line.substr(at + 8)});
      break;
    }
  }
  return rows;
}

TEST(DoctorCli, TableAndJsonAgree) {
  RunResult table = kiln_cli({"doctor"});
  RunResult json = kiln_cli({"doctor", "--json"});
  EXPECT_EQ(table.exit_code, json.exit_code);
  nlohmann::json list = nlohmann::json::parse(json.output);
  ASSERT_TRUE(list.is_array());
  std::vector<Row> rows = table_rows(table.output);
  ASSERT_EQ(rows.size(), list.size()) << table.output;
  bool failed = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& f = list[i];
    EXPECT_EQ(rows[i].check, f["check"].get<std::string>());
    EXPECT_EQ(rows[i].status, f["status"].get<std::string>()) << rows[i].check;
    // Two runs: the same findings, but available memory moves a little between them.
    if (rows[i].check != "Parallel jobs") {
      EXPECT_EQ(rows[i].finding, f["finding"].get<std::string>()) << rows[i].check;
    }
    if (!f["fix"].get<std::string>().empty()) {
      EXPECT_NE(table.output.find("fix: " + f["fix"].get<std::string>()), std::string::npos);
    }
    failed = failed || f["status"] == "FAIL";
  }
  EXPECT_EQ(json.exit_code, failed ? 1 : 0);
  EXPECT_EQ(table.output.find("\x1b["), std::string::npos) << "no colour when not a terminal";
}

// --source, --library and --llvm-config reach their checks; each bad one is a FAIL and exit 1.
TEST(DoctorCli, SourceLibraryAndLlvmConfigOptions) {
  TempDirectory dir;
  std::ofstream(dir / "libtvm.so") << "not ELF";
  RunResult r =
      kiln_cli({"doctor", "--json", "--source", dir.path().string(), "--library",
                (dir / "libtvm.so").string(), "--llvm-config", (dir / "llvm-config").string()});
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  nlohmann::json list = nlohmann::json::parse(r.output);
  std::map<std::string, std::string> status;
  for (const auto& f : list) status[f["check"].get<std::string>()] = f["status"].get<std::string>();
  EXPECT_EQ(status["Submodules"], "FAIL");
  EXPECT_EQ(status["Library"], "FAIL");
  EXPECT_EQ(status["LLVM"], "FAIL");
  // A good library passes its checks.
  RunResult lib = kiln_cli({"doctor", "--json", "--library", KILN_BINARY});
  for (const auto& f : nlohmann::json::parse(lib.output)) {
    if (f["check"].get<std::string>().starts_with("Library")) {
      EXPECT_EQ(f["status"], "PASS") << f.dump();
    }
  }
  EXPECT_EQ(kiln_cli({"doctor", "--no-such-option"}).exit_code, 2);
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
