// kiln's reports (build --json/--trace, doctor --json) and error messages, run as a user would:
// a report path the user names is written, never replaced (devices, FIFOs, symbolic links, "-");
// bytes that are not UTF-8 never stop a report; failures say what the system said.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <map>

#include <fmt/format.h>
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
using testing::c_job;
using testing::kiln_cli;
using testing::read_file;

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// A manifest of C jobs and a private cache in one temp directory; each build names its report.
class ReportProject {
 public:
  void write(const std::string& name, const std::string& text, bool executable = false) const {
    project_.write(name, text, executable);
  }
  void jobs(const std::vector<json>& jobs) const { project_.manifest({{"jobs", jobs}}); }
  fs::path path(const std::string& name) const { return project_.path(name); }

  // kiln build <manifest> --out <out> args..., run in the project's directory.
  RunResult build(std::vector<std::string> args, const std::string& out = "out") const {
    return project_.build_with(
        {.args = std::move(args), .out = out, .report = "", .in_project_directory = true});
  }

 private:
  testing::BuildProject project_;
};

// A character device like /dev/null (1, 3) or /dev/full (1, 7) of the test's own, so that a
// regression replaces this one and not the machine's. Needs CAP_MKNOD; nullopt without it.
std::optional<fs::path> make_device(const fs::path& path, unsigned minor) {
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) != 0) return std::nullopt;
  return path;
}

bool is_char_device(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

// ---- a report path is written, not replaced (issue 14, item 4) ----

TEST(ReportCli, TraceToADeviceLeavesItADevice) {
  ReportProject project;
  project.jobs({c_job("one", "int one(void) { return 1; }")});
  std::optional<fs::path> null = make_device(project.path("null"), 3);
  if (!null) GTEST_SKIP() << "mknod is not permitted here (needs CAP_MKNOD)";
  RunResult r = project.build({"--trace", null->string(), "--json", null->string()});
  ASSERT_EQ(r.exit_code, 0) << r.output << r.error_output;
  EXPECT_TRUE(is_char_device(*null)) << "the device was replaced by a regular file";
  EXPECT_TRUE(is_char_device("/dev/null"));
}

TEST(ReportCli, JsonDashPrintsTheReportAloneOnStdout) {
  ReportProject project;
  project.jobs({c_job("one", "int one(void) { return 1; }")});
  RunResult r = project.build({"--json", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.output << r.error_output;
  json report = json::parse(r.output);  // nothing but the report
  EXPECT_EQ(report["summary"]["done"], 1);
  EXPECT_NE(r.error_output.find("kiln build: 1 done"), std::string::npos) << r.error_output;
  EXPECT_FALSE(fs::exists(project.path("-"))) << "'-' was taken for a file name";
}

TEST(ReportCli, JsonToASymlinkWritesThroughIt) {
  ReportProject project;
  project.jobs({c_job("one", "int one(void) { return 1; }")});
  project.write("real.json", "old");
  fs::create_symlink(project.path("real.json"), project.path("link.json"));
  RunResult r = project.build({"--json", project.path("link.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.output << r.error_output;
  EXPECT_TRUE(fs::is_symlink(project.path("link.json")));
  EXPECT_EQ(json::parse(read_file(project.path("real.json")))["summary"]["done"], 1);
}

TEST(ReportCli, JsonToAFifoIsWrittenIntoIt) {
  ReportProject project;
  project.jobs({c_job("one", "int one(void) { return 1; }")});
  fs::path fifo = project.path("report.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Held open for reading before kiln runs, so kiln's open does not wait and the report (well
  // under a pipe's 64 KiB) waits in the pipe; nonblocking, so a regression cannot hang the test.
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  RunResult r = project.build({"--json", fifo.string()});
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(reader, buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  ::close(reader);
  ASSERT_EQ(r.exit_code, 0) << r.output << r.error_output;
  EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo);
  ASSERT_FALSE(text.empty()) << "nothing reached the FIFO";
  EXPECT_EQ(json::parse(text)["summary"]["done"], 1);
}

// ---- bytes that are not UTF-8 (issue 14, item 10) ----

TEST(ReportCli, CompilerOutputThatIsNotUtf8StillGivesReportsWithReplacementCharacters) {
  ReportProject project;
  // A compiler that fails like gcc but writes Latin-1 (0xE9) instead of UTF-8.
  project.write("latin1-cc",
                "#!/bin/sh\nprintf 'x.c:1: error: caf\\351 undeclared\\n' >&2\nexit 1\n", true);
  // A log of 3000 bytes of two-byte characters: one of the two jobs, whichever the log's prefix
  // is, has its trace log cut at 2000 bytes in the middle of a character.
  std::string many;
  for (int i = 0; i < 1500; ++i) many += "\\303\\251";  // é
  project.write("long-cc", "#!/bin/sh\nprintf '" + many + "\\n' >&2\nexit 1\n", true);
  project.write("long-cc2", "#!/bin/sh\nprintf 'x" + many + "\\n' >&2\nexit 1\n", true);
  std::vector<json> jobs;
  for (const char* cc : {"latin1-cc", "long-cc", "long-cc2"}) {
    json job = c_job(cc, "int f(void) { return 1; }");
    job["cc"] = project.path(cc).string();
    jobs.push_back(job);
  }
  project.jobs(jobs);
  RunResult r = project.build({"--keep-going", "--json", project.path("r.json").string(), "--trace",
                               project.path("t.json").string()});
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  ASSERT_TRUE(fs::exists(project.path("r.json"))) << r.error_output;
  ASSERT_TRUE(fs::exists(project.path("t.json"))) << r.error_output;
  json report = json::parse(read_file(project.path("r.json")));
  std::map<std::string, std::string> logs;
  for (const json& job : report["jobs"]) logs[job["name"]] = job["log"];
  EXPECT_NE(logs["latin1-cc"].find("caf" + kReplacement + " undeclared"), std::string::npos)
      << logs["latin1-cc"];
  json trace = json::parse(read_file(project.path("t.json")));  // outlives the loop
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] != "X" || event["name"] == "latin1-cc") continue;
    std::string log = event["args"]["log"];
    EXPECT_EQ(log.find(kReplacement), std::string::npos) << "cut inside a character";
    EXPECT_GE(log.size(), 1997u);
    EXPECT_LE(log.size(), 2000u);
  }
}

TEST(ReportCli, AnOutPathThatIsNotUtf8StillGivesAReport) {
  ReportProject project;
  project.jobs({c_job("one", "int one(void) { return 1; }")});
  RunResult r = project.build({"--json", project.path("r.json").string()}, "out\xE9");
  ASSERT_EQ(r.exit_code, 0) << r.output << r.error_output;
  json report = json::parse(read_file(project.path("r.json")));
  std::string output = report["jobs"][0]["output"];
  EXPECT_NE(output.find("out" + kReplacement + "/one.o"), std::string::npos) << output;
  EXPECT_TRUE(fs::exists(project.path("out\xE9") / "one.o"));
}

TEST(ReportCli, DoctorJsonWithALibraryPathThatIsNotUtf8) {
  TempDirectory tmp;
  fs::path library = tmp.path() / "lib\xE9\xFF.so";
  std::ofstream(library) << "not an ELF file";
  RunResult r = kiln_cli({"doctor", "--json", "--library", library.string()});
  ASSERT_FALSE(r.output.empty()) << r.error_output;
  json findings = json::parse(r.output);
  bool named = false;
  for (const json& f : findings) {
    std::string text = f["finding"].get<std::string>() + f["fix"].get<std::string>();
    std::string library_name = "lib";
    library_name += kReplacement;
    library_name += kReplacement;
    library_name += ".so";
    named = named || text.find(library_name) != std::string::npos;
  }
  EXPECT_TRUE(named) << r.output;
}

// Sources in a directory whose name is Latin-1: the job builds (its cache key holds the path's
// bytes as they are), and the second run comes from the cache.
TEST(ReportCli, AManifestInADirectoryThatIsNotUtf8BuildsAndCaches) {
  ReportProject project;
  fs::path dir = project.path("lat\xE9");
  fs::create_directory(dir);
  std::ofstream(dir / "a.c") << "int a(void) { return 1; }\n";
  std::ofstream(dir / "kiln.json")
      << R"({"jobs": [{"name": "a", "kind": "object", "sources": ["a.c"]}]})";
  std::vector<std::string> args{KILN_BINARY,
                                "build",
                                (dir / "kiln.json").string(),
                                "--out",
                                (dir / "out").string(),
                                "--json",
                                (dir / "r.json").string()};
  std::map<std::string, std::optional<std::string>> env{
      {"KILN_CACHE_DIR", project.path("cache").string()}};
  for (bool cached : {false, true}) {
    RunResult r = run({.argv = args, .env = env, .merge_stderr = false});
    ASSERT_EQ(r.exit_code, 0) << r.output << r.error_output;
    json job = json::parse(read_file(dir / "r.json"))["jobs"][0];
    EXPECT_EQ(job["status"], cached ? "cached" : "done") << job.dump();
  }
}

// ---- error messages say what the system said (issue 14, item 14) ----

TEST(ReportCli, AReportWhereADirectoryIsSaysIsADirectory) {
  ReportProject project;
  project.jobs({c_job("one", "int one(void) { return 1; }")});
  fs::create_directory(project.path("taken"));
  RunResult r = project.build({"--json", project.path("taken").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.error_output.find("write '" + project.path("taken").string() + "': Is a directory"),
            std::string::npos)
      << r.error_output;
}

TEST(ReportCli, AReportNameTooLongSaysFileNameTooLong) {
  ReportProject project;
  project.jobs({c_job("one", "int one(void) { return 1; }")});
  fs::path name = project.path(std::string(300, 'n') + ".json");
  RunResult r = project.build({"--json", name.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.error_output.find("write '" + name.string() + "': File name too long"),
            std::string::npos)
      << r.error_output;
}

TEST(ReportCli, AReportOnAFullDiskSaysNoSpaceLeft) {
  ReportProject project;
  project.jobs({c_job("one", "int one(void) { return 1; }")});
  std::optional<fs::path> full = make_device(project.path("full"), 7);
  if (!full) GTEST_SKIP() << "mknod is not permitted here (needs CAP_MKNOD)";
  RunResult r = project.build({"--json", full->string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.error_output.find("write '" + full->string() + "': No space left on device"),
            std::string::npos)
      << r.error_output;
  EXPECT_TRUE(is_char_device(*full));
}

TEST(ReportCli, SymbolsOfADirectorySaysIsADirectory) {
  TempDirectory tmp;
  RunResult r = kiln_cli({"cc", "symbols", tmp.path().string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.error_output.find(fmt::format("'{}': Is a directory", tmp.path().string())),
            std::string::npos)
      << r.error_output;
  EXPECT_EQ(r.error_output.find("does not exist"), std::string::npos) << r.error_output;
}

TEST(ReportCli, ExtractingADirectorySaysIsADirectory) {
  TempDirectory tmp;
  fs::create_directory(tmp.path() / "archive");
  RunResult r = kiln_cli(
      {"tar", "extract", (tmp.path() / "archive").string(), "-C", (tmp.path() / "out").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(
      r.error_output.find(fmt::format("'{}': Is a directory", (tmp.path() / "archive").string())),
      std::string::npos)
      << r.error_output;
  EXPECT_EQ(r.error_output.find("Error reading fd"), std::string::npos) << r.error_output;
}

// An output named with -o where a device sits is refused, and the device stays one (it used to
// be renamed over, which as root turned /dev/full into a regular file).
TEST(ReportCli, AnOutputOntoADeviceIsRefusedAndTheDeviceStays) {
  TempDirectory tmp;
  std::optional<fs::path> full = make_device(tmp.path() / "full", 7);
  if (!full) GTEST_SKIP() << "mknod is not permitted here (needs CAP_MKNOD)";
  std::ofstream(tmp.path() / "a.txt") << "a\n";
  RunResult r = kiln_cli({"tar", "create", "-o", full->string(), (tmp.path() / "a.txt").string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.error_output.find(
                fmt::format("'{}': it is a character device, not a file", full->string())),
            std::string::npos)
      << r.error_output;
  EXPECT_TRUE(is_char_device(*full)) << "the device was replaced by a regular file";
}

}  // namespace
}  // namespace kiln
