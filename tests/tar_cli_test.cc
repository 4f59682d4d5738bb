// End-to-end tests of `kiln tar create` and `kiln tar extract`.
#include <archive.h>
#include <archive_entry.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cli_support.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using kiln::testing::kiln_cli;

// A gzip tar with one member named "../escape".
void write_escaping_archive(const fs::path& path) {
  archive* writer = archive_write_new();
  archive_write_add_filter_gzip(writer);
  archive_write_set_format_pax_restricted(writer);
  ASSERT_EQ(archive_write_open_filename(writer, path.c_str()), ARCHIVE_OK);
  archive_entry* entry = archive_entry_new();
  archive_entry_copy_pathname(entry, "../escape");
  archive_entry_set_filetype(entry, AE_IFREG);
  archive_entry_set_perm(entry, 0644);
  archive_entry_set_size(entry, 1);
  ASSERT_EQ(archive_write_header(writer, entry), ARCHIVE_OK);
  ASSERT_EQ(archive_write_data(writer, "x", 1), 1);
  archive_entry_free(entry);
  EXPECT_EQ(archive_write_close(writer), ARCHIVE_OK);
  archive_write_free(writer);
}

class TarCli : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return (tmp_ / name).string(); }
  kiln::TempDirectory tmp_;
};

TEST_F(TarCli, CreateThenExtractRoundTrips) {
  fs::create_directories(tmp_ / "src" / "deep");
  std::ofstream(tmp_ / "src" / "a.o") << "object a";
  std::ofstream(tmp_ / "src" / "deep" / "b.o") << "object b";
  kiln::RunResult create =
      kiln_cli({"tar", "create", "-o", path("objs.tar"), path("src/a.o"), path("src/deep/b.o")});
  ASSERT_EQ(create.exit_code, 0) << create.error_output;
  EXPECT_EQ(create.output, "");
  kiln::RunResult extract = kiln_cli({"tar", "extract", path("objs.tar"), "-C", path("out")});
  ASSERT_EQ(extract.exit_code, 0) << extract.error_output;
  EXPECT_EQ(kiln::testing::read_file(tmp_ / "out" / "a.o"), "object a");
  EXPECT_EQ(kiln::testing::read_file(tmp_ / "out" / "b.o"), "object b") << "members are base names";
}

TEST_F(TarCli, HostileArchiveExitsOneNamingTheMember) {
  write_escaping_archive(tmp_ / "evil.tar");
  kiln::RunResult r = kiln_cli({"tar", "extract", path("evil.tar"), "-C", path("out")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.error_output.starts_with("kiln: error: Tar error: ")) << r.error_output;
  EXPECT_NE(r.error_output.find("'../escape'"), std::string::npos) << r.error_output;
  EXPECT_FALSE(fs::exists(tmp_ / "escape"));
}

TEST_F(TarCli, MissingInputExitsOneAndDuplicateNamesExitTwo) {
  std::ofstream(tmp_ / "a.o") << "a";
  kiln::RunResult missing =
      kiln_cli({"tar", "create", "-o", path("x.tar"), path("a.o"), path("missing.o")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.error_output.find(path("missing.o")), std::string::npos)
      << missing.error_output;
  fs::create_directories(tmp_ / "other");
  std::ofstream(tmp_ / "other" / "a.o") << "a";
  kiln::RunResult duplicate =
      kiln_cli({"tar", "create", "-o", path("x.tar"), path("a.o"), path("other/a.o")});
  EXPECT_EQ(duplicate.exit_code, 2);
  EXPECT_NE(duplicate.error_output.find("duplicate file name a.o"), std::string::npos)
      << duplicate.error_output;
  EXPECT_FALSE(fs::exists(tmp_ / "x.tar"));
}

TEST_F(TarCli, AnOutputWhereADirectoryIsSaysIsADirectory) {
  std::ofstream(tmp_ / "a.o") << "a";
  fs::create_directories(tmp_ / "taken");
  kiln::RunResult r = kiln_cli({"tar", "create", "-o", path("taken"), path("a.o")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.error_output.find("write '" + path("taken") + "'"), std::string::npos)
      << r.error_output;
  EXPECT_NE(r.error_output.find("Is a directory"), std::string::npos) << r.error_output;
  EXPECT_EQ(r.error_output.find(".kiln-"), std::string::npos) << "names a temporary file";
}

TEST_F(TarCli, HelpForEachSubcommand) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"tar", "--help"}, {"tar", "create", "--help"}, {"tar", "extract", "--help"}}) {
    kiln::RunResult r = kiln_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.error_output;
    EXPECT_NE(r.output.find("Usage:"), std::string::npos) << r.output;
  }
}

TEST_F(TarCli, BadUsageExitsTwo) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"tar"},
           {"tar", "frobnicate"},
           {"tar", "create", path("a.o")},
           {"tar", "create", "-o", path("x.tar")},
           {"tar", "extract", path("x.tar")},
           {"tar", "extract", "-C", path("out")},
           {"tar", "extract", path("x.tar"), "-C", path("out"), "--bogus"}}) {
    kiln::RunResult r = kiln_cli(args);
    EXPECT_EQ(r.exit_code, 2) << kiln::format_command_line(args) << "\n" << r.error_output;
    EXPECT_TRUE(r.error_output.starts_with("kiln: error: ")) << r.error_output;
  }
  EXPECT_FALSE(fs::exists(tmp_ / "out"));
}

// A small gzip bomb: 10 MB of zeros in a ~10 KB archive, after a first small member.
TEST_F(TarCli, AnArchivePastMaxBytesIsRefusedAndNothingIsLeft) {
  kiln::testing::write_tar_gz(tmp_ / "bomb.tar.gz",
                              {{"first.txt", "kept?"}, {"zeros", std::string(10 << 20, '\0')}});
  EXPECT_LT(fs::file_size(tmp_ / "bomb.tar.gz"), 100'000u);
  kiln::RunResult r = kiln_cli(
      {"tar", "extract", path("bomb.tar.gz"), "-C", path("out/deep"), "--max-bytes", "1M"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.error_output.find("member 'zeros' goes past the limit of 1048576 bytes"),
            std::string::npos)
      << r.error_output;
  EXPECT_NE(r.error_output.find("--max-bytes"), std::string::npos) << r.error_output;
  EXPECT_FALSE(fs::exists(tmp_ / "out")) << "the extraction left files behind";

  // Into a directory that was there: it stays, and only what the extraction made goes.
  fs::create_directories(tmp_ / "mine");
  std::ofstream(tmp_ / "mine" / "own.txt") << "own";
  r = kiln_cli({"tar", "extract", path("bomb.tar.gz"), "-C", path("mine"), "--max-bytes", "1M"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(fs::exists(tmp_ / "mine" / "first.txt"));
  EXPECT_EQ(kiln::testing::read_file(tmp_ / "mine" / "own.txt"), "own");
  // Under a raised limit the same archive extracts.
  r = kiln_cli({"tar", "extract", path("bomb.tar.gz"), "-C", path("out"), "--max-bytes", "20M"});
  EXPECT_EQ(r.exit_code, 0) << r.error_output;
  EXPECT_EQ(fs::file_size(tmp_ / "out" / "zeros"), 10u << 20);
}

TEST_F(TarCli, AnArchivePastMaxMembersIsRefusedAndNothingIsLeft) {
  kiln::testing::write_tar_gz(
      tmp_ / "many.tar.gz", {{"d/a", "a"}, {"d/b", "b"}, {"d/c", "c"}, {"d/e", "e"}, {"d/f", "f"}});
  kiln::RunResult r =
      kiln_cli({"tar", "extract", path("many.tar.gz"), "-C", path("out"), "--max-members", "3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.error_output.find("member 'd/e' goes past the limit of 3 members"), std::string::npos)
      << r.error_output;
  EXPECT_FALSE(fs::exists(tmp_ / "out")) << "the extraction left files behind";
}

TEST_F(TarCli, MemberNamesInMessagesAreEscaped) {
  kiln::testing::write_tar_gz(tmp_ / "evil.tar.gz", {{"\x1b]0;owned\x07\x1b[2J/../../x", "x"}});
  kiln::RunResult r = kiln_cli({"tar", "extract", path("evil.tar.gz"), "-C", path("out")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.error_output.find('\x1b'), std::string::npos) << "raw ESC reached the terminal";
  EXPECT_EQ(r.error_output.find('\x07'), std::string::npos);
  EXPECT_NE(r.error_output.find("'\\x1b]0;owned\\x07\\x1b[2J/../../x'"), std::string::npos)
      << r.error_output;
}

TEST_F(TarCli, ExtractHelpDocumentsTheLimits) {
  kiln::RunResult r = kiln_cli({"tar", "extract", "--help"});
  EXPECT_NE(r.output.find("--max-bytes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--max-members"), std::string::npos) << r.output;
}

}  // namespace
