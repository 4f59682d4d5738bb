#include "kiln/tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& content,
                fs::perms mode = fs::perms(0644)) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
  fs::permissions(path, mode);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

unsigned mode_of(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Mode, link count and content of a file: a hard link made to it changes the count.
std::string fingerprint(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return fmt::format("mode {:o} links {} {}", st.st_mode & 07777, st.st_nlink, read_file(path));
}

// One member of an archive the test builds itself (hostile ones included).
struct Member {
  std::string name{};
  unsigned type = AE_IFREG;
  unsigned perm = 0644;
  std::string data{};
  std::string symlink{};   // target of an AE_IFLNK member
  std::string hardlink{};  // when set, the member is a hard link to this name
  dev_t rdev = 0;
};

Member file(std::string name, std::string data = {}, unsigned perm = 0644) {
  return {.name = std::move(name), .perm = perm, .data = std::move(data)};
}
Member directory(std::string name) {
  return {.name = std::move(name), .type = AE_IFDIR, .perm = 0755};
}
Member symlink(std::string name, std::string target) {
  return {.name = std::move(name), .type = AE_IFLNK, .perm = 0777, .symlink = std::move(target)};
}
Member hardlink(std::string name, std::string target) {
  return {.name = std::move(name), .hardlink = std::move(target)};
}

void add_member(archive* writer, const Member& m) {
  archive_entry* entry = archive_entry_new();
  archive_entry_copy_pathname(entry, m.name.c_str());
  archive_entry_set_filetype(entry, m.type);
  archive_entry_set_perm(entry, m.perm);
  archive_entry_set_mtime(entry, 1700000000, 0);
  if (!m.symlink.empty()) archive_entry_copy_symlink(entry, m.symlink.c_str());
  if (!m.hardlink.empty()) archive_entry_copy_hardlink(entry, m.hardlink.c_str());
  if (m.rdev != 0) archive_entry_set_rdev(entry, m.rdev);
  archive_entry_set_size(entry, static_cast<la_int64_t>(m.data.size()));
  ASSERT_EQ(archive_write_header(writer, entry), ARCHIVE_OK) << archive_error_string(writer);
  if (!m.data.empty()) {
    ASSERT_EQ(archive_write_data(writer, m.data.data(), m.data.size()),
              static_cast<la_ssize_t>(m.data.size()));
  }
  archive_entry_free(entry);
}

// Writes `members` as a pax tar at `path`, gzip-compressed or plain.
void write_archive(const fs::path& path, const std::vector<Member>& members, bool gzip = true) {
  archive* writer = archive_write_new();
  if (gzip) archive_write_add_filter_gzip(writer);
  archive_write_set_format_pax_restricted(writer);
  ASSERT_EQ(archive_write_open_filename(writer, path.c_str()), ARCHIVE_OK);
  for (const Member& m : members) add_member(writer, m);
  EXPECT_EQ(archive_write_close(writer), ARCHIVE_OK) << archive_error_string(writer);
  archive_write_free(writer);
}

// The member names of an archive, in order.
std::vector<std::string> list_archive(const fs::path& path) {
  std::vector<std::string> names;
  archive* reader = archive_read_new();
  archive_read_support_filter_all(reader);
  archive_read_support_format_all(reader);
  EXPECT_EQ(archive_read_open_filename(reader, path.c_str(), 10240), ARCHIVE_OK);
  archive_entry* entry = nullptr;
  while (archive_read_next_header(reader, &entry) == ARCHIVE_OK) {
    names.emplace_back(archive_entry_pathname(entry));
  }
  archive_read_free(reader);
  return names;
}

// Every entry under `root` (not descending into `skip`), with its type, mode, link count and
// content or link target: two equal snapshots mean nothing there changed.
std::map<std::string, std::string> snapshot(const fs::path& root, const fs::path& skip = {}) {
  std::map<std::string, std::string> entries;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const fs::path& path = it->path();
    std::string key = fs::relative(path, root).string();
    if (path == skip) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_symlink()) {
      entries[key] = "link " + fs::read_symlink(path).string();
    } else if (it->is_regular_file()) {
      entries[key] = "file " + fingerprint(path);
    } else {
      entries[key] =
          fmt::format("{} mode {:o}", it->is_directory() ? "dir" : "other", mode_of(path));
    }
  }
  return entries;
}

std::vector<fs::path> regular_files_under(const fs::path& root) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && !entry.is_symlink()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Tar, HeaderExample) {
  TempDirectory tmp;
  write_file(tmp / "build" / "a.o", "object a");
  write_file(tmp / "build" / "b.o", "object b");
  write_file(tmp / "x.o", "object x");
  fs::path objects = tmp / "objects.tar";
  tar(objects, {tmp / "build" / "a.o", tmp / "build" / "b.o"});
  EXPECT_EQ(list_archive(objects), (std::vector<std::string>{"a.o", "b.o"}));
  untar(objects, tmp / "unpacked/");
  EXPECT_EQ(read_file(tmp / "unpacked" / "a.o"), "object a");
  EXPECT_EQ(read_file(tmp / "unpacked" / "b.o"), "object b");

  TempDirectory scratch;
  std::vector<fs::path> normalized =
      normalize_file_list_by_unpacking_tars(scratch, {tmp / "x.o", objects});
  EXPECT_EQ(normalized, (std::vector<fs::path>{tmp / "x.o", scratch / "temp0" / "a.o",
                                               scratch / "temp0" / "b.o"}));
  EXPECT_STREQ(kTarOutputFormat, "tar");
}

TEST(Tar, RoundTripKeepsBytesNamesAndModes) {
  TempDirectory tmp;
  std::string binary("\0\x01\xff\x7f\n\r", 6);
  std::string big(size_t{200} * 1024 + 17, 'z');  // spans several read blocks
  for (size_t i = 0; i < big.size(); i += 97) big[i] = static_cast<char>(i % 251);
  write_file(tmp / "in" / "run.sh", "#!/bin/sh\necho hi\n", fs::perms(0755));
  write_file(tmp / "in" / "secret.key", binary, fs::perms(0600));
  write_file(tmp / "in" / "big.bin", big, fs::perms(0644));
  write_file(tmp / "in" / "empty", "", fs::perms(0444));
  std::vector<fs::path> inputs = {tmp / "in" / "run.sh", tmp / "in" / "secret.key",
                                  tmp / "in" / "big.bin", tmp / "in" / "empty"};
  tar(tmp / "all.tar", inputs);
  untar(tmp / "all.tar", tmp / "out");
  EXPECT_EQ(read_file(tmp / "out" / "run.sh"), "#!/bin/sh\necho hi\n");
  EXPECT_EQ(read_file(tmp / "out" / "secret.key"), binary);
  EXPECT_EQ(read_file(tmp / "out" / "big.bin"), big);
  EXPECT_EQ(read_file(tmp / "out" / "empty"), "");
  EXPECT_EQ(mode_of(tmp / "out" / "run.sh"), 0755u);
  EXPECT_EQ(mode_of(tmp / "out" / "secret.key"), 0600u);
  EXPECT_EQ(mode_of(tmp / "out" / "big.bin"), 0644u);
  EXPECT_EQ(mode_of(tmp / "out" / "empty"), 0444u);
  EXPECT_EQ(regular_files_under(tmp / "out").size(), 4u);
}

TEST(Tar, StoresOnlyBaseNamesInTheOrderGiven) {
  TempDirectory tmp;
  write_file(tmp / "deep" / "er" / "z.o", "z");
  write_file(tmp / "a.o", "a");
  tar(tmp / "out.tar", {tmp / "deep" / "er" / "z.o", tmp / "a.o"});
  EXPECT_EQ(list_archive(tmp / "out.tar"), (std::vector<std::string>{"z.o", "a.o"}));
}

TEST(Tar, StoresOnlyPermissionBitsNeverSetuid) {
  TempDirectory tmp;
  write_file(tmp / "tool", "x", fs::perms(04755));
  tar(tmp / "t.tar", {tmp / "tool"});
  untar(tmp / "t.tar", tmp / "out");
  EXPECT_EQ(mode_of(tmp / "out" / "tool"), 0755u);
}

TEST(Tar, DuplicateBaseNamesAreRefused) {
  TempDirectory tmp;
  write_file(tmp / "d1" / "x.o", "1");
  write_file(tmp / "d2" / "x.o", "2");
  try {
    tar(tmp / "out.tar", {tmp / "d1" / "x.o", tmp / "d2" / "x.o"});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("duplicate file name x.o"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp / "out.tar"));
}

TEST(Tar, MissingInputIsFileNotFoundAndLeavesNoOutput) {
  TempDirectory tmp;
  write_file(tmp / "a.o", "a");
  try {
    tar(tmp / "out.tar", {tmp / "a.o", tmp / "missing.o"});
    FAIL() << "expected FileNotFound";
  } catch (const FileNotFound& e) {
    EXPECT_NE(std::string(e.what()).find((tmp / "missing.o").string()), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(tmp.listdir(), std::vector<std::string>{"a.o"}) << "no archive, no temporary file";
}

TEST(Tar, FailureLeavesAnExistingOutputUntouched) {
  TempDirectory tmp;
  write_file(tmp / "out.tar", "previous archive");
  EXPECT_THROW(tar(tmp / "out.tar", {tmp / "missing.o"}), FileNotFound);
  EXPECT_EQ(read_file(tmp / "out.tar"), "previous archive");
  EXPECT_EQ(tmp.listdir(), std::vector<std::string>{"out.tar"});
}

TEST(Tar, DirectoryInputIsInvalid) {
  TempDirectory tmp;
  fs::create_directories(tmp / "dir");
  EXPECT_THROW(tar(tmp / "out.tar", {tmp / "dir"}), InvalidArgument);
  EXPECT_FALSE(fs::exists(tmp / "out.tar"));
}

TEST(Untar, PlainTarExtractsToo) {
  TempDirectory tmp;
  write_archive(tmp / "plain.tar", {directory("sub/"), file("sub/a.txt", "alpha", 0640)},
                /*gzip=*/false);
  untar(tmp / "plain.tar", tmp / "out");
  EXPECT_EQ(read_file(tmp / "out" / "sub" / "a.txt"), "alpha");
  EXPECT_EQ(mode_of(tmp / "out" / "sub" / "a.txt"), 0640u);
}

TEST(Untar, DotSlashNamesAsGnuTarWritesThem) {
  TempDirectory tmp;
  write_archive(tmp / "dot.tar",
                {directory("./"), file("./a", "a"), directory("./d/"), file("./d/b", "b")});
  untar(tmp / "dot.tar", tmp / "out");
  EXPECT_EQ(read_file(tmp / "out" / "a"), "a");
  EXPECT_EQ(read_file(tmp / "out" / "d" / "b"), "b");
}

TEST(Untar, LinksThatStayInsideAreExtracted) {
  TempDirectory tmp;
  write_archive(tmp / "links.tar",
                {file("lib64/libfoo.so.1", "elf"), symlink("lib/libfoo.so", "../lib64/libfoo.so.1"),
                 symlink("current", "lib64"), hardlink("copy", "lib64/libfoo.so.1")});
  untar(tmp / "links.tar", tmp / "out");
  EXPECT_EQ(fs::read_symlink(tmp / "out" / "lib" / "libfoo.so"), "../lib64/libfoo.so.1");
  EXPECT_EQ(read_file(tmp / "out" / "lib" / "libfoo.so"), "elf");
  EXPECT_EQ(read_file(tmp / "out" / "current" / "libfoo.so.1"), "elf");
  EXPECT_TRUE(fs::equivalent(tmp / "out" / "copy", tmp / "out" / "lib64" / "libfoo.so.1"));
}

TEST(Untar, MissingArchiveIsFileNotFound) {
  TempDirectory tmp;
  EXPECT_THROW(untar(tmp / "nope.tar", tmp / "out"), FileNotFound);
}

TEST(Untar, CorruptArchiveIsATarError) {
  TempDirectory tmp;
  write_file(tmp / "junk.tar", std::string(4096, 'j'));
  try {
    untar(tmp / "junk.tar", tmp / "out");
    FAIL() << "expected kiln::ArchiveError";
  } catch (const ArchiveError& e) {
    EXPECT_EQ(dynamic_cast<const UnsafeArchiveMember*>(&e), nullptr) << "corrupt, not hostile";
    std::string message = e.what();
    EXPECT_TRUE(message.starts_with("Tar error: ")) << message;
    EXPECT_NE(message.find((tmp / "junk.tar").string()), std::string::npos) << message;
  }
}

TEST(Untar, TruncatedGzipIsATarError) {
  TempDirectory tmp;
  write_file(tmp / "a", std::string(100000, 'a') + "tail");
  tar(tmp / "a.tar", {tmp / "a"});
  std::string bytes = read_file(tmp / "a.tar");
  write_file(tmp / "cut.tar", bytes.substr(0, bytes.size() / 2));
  EXPECT_THROW(untar(tmp / "cut.tar", tmp / "out"), ArchiveError);
}

TEST(Untar, LeavesNoDescriptorOpen) {
  TempDirectory tmp;
  write_file(tmp / "a", "a");
  std::vector<int> before = testing::open_fds();
  tar(tmp / "a.tar", {tmp / "a"});
  untar(tmp / "a.tar", tmp / "out");
  EXPECT_THROW(untar(tmp / "missing.tar", tmp / "out"), FileNotFound);
  EXPECT_EQ(testing::open_fds(), before);
}

TEST(Untar, LeavesNoDescriptorOpenWithNestedMembersOrARefusal) {
  TempDirectory tmp;
  write_archive(tmp / "nested.tar", {directory("d/"), file("d/e/f", "f"), file("d/g", "g"),
                                     hardlink("h", "d/e/f"), symlink("d/l", "g")});
  write_archive(tmp / "bad.tar", {file("d/e/ok", "ok"), symlink("up", "../x")});
  std::vector<int> before = testing::open_fds();
  untar(tmp / "nested.tar", tmp / "out");
  EXPECT_THROW(untar(tmp / "bad.tar", tmp / "out"), Error);
  EXPECT_EQ(testing::open_fds(), before);
  EXPECT_EQ(read_file(tmp / "out" / "h"), "f");
  EXPECT_EQ(read_file(tmp / "out" / "d" / "e" / "ok"), "ok");
}

TEST(Untar, MakesMissingParentDirectories) {
  TempDirectory tmp;
  write_archive(tmp / "deep.tar", {file("a/b/c.txt", "c"), file("a/b/d.txt", "d"),
                                   file("a/e/f.txt", "f"), file("top.txt", "t")});
  untar(tmp / "deep.tar", tmp / "out");
  EXPECT_EQ(read_file(tmp / "out" / "a" / "b" / "c.txt"), "c");
  EXPECT_EQ(read_file(tmp / "out" / "a" / "b" / "d.txt"), "d");
  EXPECT_EQ(read_file(tmp / "out" / "a" / "e" / "f.txt"), "f");
  EXPECT_EQ(read_file(tmp / "out" / "top.txt"), "t");
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(tmp / "out" / "a" / "b")));
}

int64_t mtime_of(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mtim.tv_sec;
}

TEST(Untar, RestoresModesAndTimesOfFilesDirectoriesAndLinks) {
  TempDirectory tmp;
  Member locked = directory("locked/");
  locked.perm = 0500;  // no write permission: its contents must be written before it is set
  write_archive(tmp / "t.tar", {locked, file("locked/f", "f", 0640), directory("open/"),
                                symlink("open/l", "../locked/f")});
  untar(tmp / "t.tar", tmp / "out");
  EXPECT_EQ(read_file(tmp / "out" / "locked" / "f"), "f");
  EXPECT_EQ(mode_of(tmp / "out" / "locked"), 0500u);
  EXPECT_EQ(mode_of(tmp / "out" / "locked" / "f"), 0640u);
  EXPECT_EQ(mode_of(tmp / "out" / "open"), 0755u);
  for (const char* path : {"locked", "locked/f", "open", "open/l"}) {
    EXPECT_EQ(mtime_of(tmp / "out" / path), 1700000000) << path;  // add_member's mtime
  }
  fs::permissions(tmp / "out" / "locked", fs::perms(0700));  // so TempDirectory can remove it
}

TEST(Untar, ExactModesFromManyThreadsAtOnceWhateverTheUmask) {
  TempDirectory tmp;
  Member tools = directory("tools/");
  tools.perm = 0750;
  write_archive(tmp / "t.tar", {tools, file("tools/run", "#!/bin/sh\n", 0750),
                                file("tools/data", "data", 0644), file("lib/x.o", "x", 0644)});
  constexpr int kThreads = 8;
  mode_t saved = ::umask(077);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      try {
        for (int round = 0; round < 20; ++round) {
          untar(tmp / "t.tar", tmp / fmt::format("out{}", i) / fmt::format("r{}", round));
        }
      } catch (const Error& e) {
        errors[i] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(::umask(saved), 077u) << "untar changed the process umask";
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(errors[i], "") << "thread " << i;
    for (int round = 0; round < 20; ++round) {
      fs::path out = tmp / fmt::format("out{}", i) / fmt::format("r{}", round);
      EXPECT_EQ(read_file(out / "tools" / "run"), "#!/bin/sh\n");
      EXPECT_EQ(mode_of(out / "tools"), 0750u) << out;
      EXPECT_EQ(mode_of(out / "tools" / "run"), 0750u) << out;
      EXPECT_EQ(mode_of(out / "tools" / "data"), 0644u) << out;
      EXPECT_EQ(mode_of(out / "lib" / "x.o"), 0644u) << out;
      EXPECT_EQ(mode_of(out / "lib"), 0700u) << out << ": not in the archive, 0777 less the umask";
    }
  }
}

TEST(Untar, ALaterMemberReplacesAnEarlierOneOfTheSameName) {
  TempDirectory tmp;
  write_archive(tmp / "t.tar",
                {file("x", "first"), file("x", "second"), symlink("l", "x"), file("l", "plain"),
                 directory("d/"), file("d", "was a dir"), directory("e/"), symlink("e", "x")});
  write_file(tmp / "out" / "old", "before");
  write_archive(tmp / "u.tar", {file("old", "after", 0600)});
  untar(tmp / "t.tar", tmp / "out");
  untar(tmp / "u.tar", tmp / "out");
  EXPECT_EQ(read_file(tmp / "out" / "x"), "second");
  EXPECT_FALSE(fs::is_symlink(tmp / "out" / "l"));
  EXPECT_EQ(read_file(tmp / "out" / "l"), "plain");
  EXPECT_EQ(read_file(tmp / "out" / "x"), "second") << "written through the link 'l'";
  EXPECT_EQ(read_file(tmp / "out" / "d"), "was a dir");
  EXPECT_EQ(fs::read_symlink(tmp / "out" / "e"), "x");
  EXPECT_EQ(read_file(tmp / "out" / "old"), "after");
  EXPECT_EQ(mode_of(tmp / "out" / "old"), 0600u);
}

TEST(NormalizeFileList, UnpacksEachTarIntoItsOwnTempDirectorySorted) {
  TempDirectory tmp;
  write_archive(tmp / "one.tar", {file("b.o", "b"), file("a.o", "a"), directory("sub/"),
                                  file("sub/c.o", "c"), symlink("link.o", "a.o")});
  write_file(tmp / "z.o", "z");
  tar(tmp / "two.tar", {tmp / "z.o"});
  TempDirectory scratch;
  std::vector<fs::path> result = normalize_file_list_by_unpacking_tars(
      scratch, {"x.o", tmp / "one.tar", "y.tar.gz", tmp / "two.tar", "w.o"});
  std::vector<fs::path> expected = {"x.o",
                                    scratch / "temp0" / "a.o",
                                    scratch / "temp0" / "b.o",
                                    scratch / "temp0" / "sub" / "c.o",
                                    "y.tar.gz",
                                    scratch / "temp1" / "z.o",
                                    "w.o"};
  EXPECT_EQ(result, expected);
  EXPECT_EQ(scratch.listdir(), (std::vector<std::string>{"temp0", "temp1"}));
}

// ---- hostile archives ----

// Each test extracts into sandbox/out; sandbox/outside and /etc/passwd must not change.
class HostileArchive : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(outside_ / "secret", "keep me");
    passwd_ = fingerprint("/etc/passwd");
  }

  // Extracts an archive of `members`; expects a refusal naming the archive and `member`, with
  // `reason` in the message, and nothing changed outside sandbox/out.
  void expect_refused(const std::vector<Member>& members, const std::string& member,
                      const std::string& reason) {
    fs::path archive_path = sandbox_ / "evil.tar";
    write_archive(archive_path, members);
    std::map<std::string, std::string> before = snapshot(sandbox_.path(), out_);
    try {
      untar(archive_path, out_);
      ADD_FAILURE() << "extracted a hostile archive; expected a refusal of '" << member << "'";
    } catch (const UnsafeArchiveMember& e) {
      std::string message = e.what();
      EXPECT_TRUE(message.starts_with("Tar error: ")) << message;
      EXPECT_NE(message.find("'" + member + "'"), std::string::npos) << message;
      EXPECT_NE(message.find(archive_path.string()), std::string::npos) << message;
      EXPECT_NE(message.find(reason), std::string::npos) << message;
    }
    EXPECT_EQ(snapshot(sandbox_.path(), out_), before) << "something changed outside the target";
    EXPECT_EQ(fingerprint("/etc/passwd"), passwd_);
    fs::remove(archive_path);
  }

  TempDirectory sandbox_;
  fs::path out_ = sandbox_ / "out";
  fs::path outside_ = sandbox_ / "outside";
  std::string passwd_;
};

TEST_F(HostileArchive, AbsolutePathIsRefused) {
  std::string absolute = (outside_ / "planted").string();
  expect_refused({file(absolute, "planted")}, absolute, "absolute path");
  EXPECT_FALSE(fs::exists(outside_ / "planted"));
}

TEST_F(HostileArchive, DotDotIsRefused) {
  expect_refused({file("../escape", "x")}, "../escape", "'..'");
  expect_refused({file("ok/../../escape", "x")}, "ok/../../escape", "'..'");
  EXPECT_FALSE(fs::exists(sandbox_ / "escape"));
}

TEST_F(HostileArchive, SymlinkOutsideThenWriteThroughItIsRefused) {
  expect_refused({symlink("link", outside_.string()), file("link/evil", "pwned")}, "link",
                 "absolute path");
  expect_refused({symlink("link", "../outside"), file("link/evil", "pwned")}, "link",
                 "leads outside");
  expect_refused({directory("a/"), symlink("a/link", "../../outside"), file("a/link/evil", "x")},
                 "a/link", "leads outside");
  EXPECT_FALSE(fs::exists(outside_ / "evil"));
  EXPECT_FALSE(fs::is_symlink(out_ / "link"));
}

TEST_F(HostileArchive, SymlinkWithDotDotAfterANameIsRefused) {
  // "q" -> "." is harmless, but then "r" -> "q/.." is the parent of the target.
  expect_refused({symlink("q", "."), symlink("r", "q/..")}, "r", "'..' after a name");
}

TEST_F(HostileArchive, WritingThroughASymlinkAlreadyThereIsRefused) {
  fs::create_directories(out_);
  fs::create_symlink("../outside", out_ / "link");
  expect_refused({file("link/evil", "pwned")}, "link/evil", "symbolic link");
  EXPECT_FALSE(fs::exists(outside_ / "evil"));
}

TEST_F(HostileArchive, HardLinkOutsideIsRefused) {
  expect_refused({hardlink("pw", "/etc/passwd"), file("pw", "root::0:0::/:/bin/sh\n")}, "pw",
                 "hard link");
  expect_refused({hardlink("pw", "../../../../../../../../../../../../etc/passwd")}, "pw",
                 "hard link");
  expect_refused({hardlink("s", "../outside/secret")}, "s", "hard link");
  EXPECT_FALSE(fs::exists(out_ / "pw"));
  EXPECT_FALSE(fs::exists(out_ / "s"));
}

TEST_F(HostileArchive, HardLinkToASymlinkIsRefused) {
  // link(2) copies the symbolic link itself; at the top, "../../x" would point two levels up.
  expect_refused(
      {directory("a/"), directory("a/b/"), symlink("a/b/l", "../../x"), hardlink("m", "a/b/l")},
      "m", "not a regular file");
}

TEST_F(HostileArchive, DeviceNodesAreRefusedEvenForRoot) {
  expect_refused({{.name = "null", .type = AE_IFCHR, .perm = 0666, .rdev = makedev(1, 3)}}, "null",
                 "character device");
  expect_refused({{.name = "disk", .type = AE_IFBLK, .perm = 0660, .rdev = makedev(8, 0)}}, "disk",
                 "block device");
  EXPECT_FALSE(fs::exists(fs::symlink_status(out_ / "null")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(out_ / "disk")));
}

TEST_F(HostileArchive, FifoIsRefused) {
  expect_refused({{.name = "pipe", .type = AE_IFIFO, .perm = 0644}}, "pipe", "FIFO");
  EXPECT_FALSE(fs::exists(fs::symlink_status(out_ / "pipe")));
}

TEST_F(HostileArchive, SetuidAndSetgidAreRefusedEvenForRoot) {
  expect_refused({file("suid", "#!/bin/sh\n", 04755)}, "suid", "setuid");
  expect_refused({file("sgid", "#!/bin/sh\n", 02755)}, "sgid", "setgid");
  expect_refused({{.name = "dir/", .type = AE_IFDIR, .perm = 02775}}, "dir/", "setgid");
  EXPECT_FALSE(fs::exists(out_ / "suid"));
  EXPECT_FALSE(fs::exists(out_ / "sgid"));
}

TEST_F(HostileArchive, AFileReplacesASymlinkAlreadyThereInsteadOfWritingThroughIt) {
  fs::create_directories(out_);
  fs::create_symlink("../outside/secret", out_ / "secret");
  std::map<std::string, std::string> before = snapshot(sandbox_.path(), out_);
  write_archive(sandbox_ / "t.tar", {file("secret", "pwned")});
  untar(sandbox_ / "t.tar", out_);
  EXPECT_FALSE(fs::is_symlink(out_ / "secret"));
  EXPECT_EQ(read_file(out_ / "secret"), "pwned");
  EXPECT_EQ(read_file(outside_ / "secret"), "keep me");
  fs::remove(sandbox_ / "t.tar");
  EXPECT_EQ(snapshot(sandbox_.path(), out_), before);
}

TEST_F(HostileArchive, HardLinkThroughASymlinkIsRefused) {
  fs::create_directories(out_);
  fs::create_symlink("../outside", out_ / "up");
  expect_refused({hardlink("s", "up/secret")}, "s", "symbolic link");
  EXPECT_FALSE(fs::exists(out_ / "s"));
}

TEST_F(HostileArchive, TenThousandEmptyMembersAreLegal) {
  std::vector<Member> members;
  members.reserve(10000);
  for (int i = 0; i < 10000; ++i) members.push_back(file(fmt::format("m{:05d}", i)));
  write_archive(sandbox_ / "many.tar", members);
  std::map<std::string, std::string> before = snapshot(sandbox_.path(), out_);
  auto start = std::chrono::steady_clock::now();
  untar(sandbox_ / "many.tar", out_);
  auto elapsed = std::chrono::steady_clock::now() - start;
  RecordProperty(
      "extract_ms",
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
  EXPECT_EQ(regular_files_under(out_).size(), 10000u);
  EXPECT_EQ(snapshot(sandbox_.path(), out_), before);
}

}  // namespace
}  // namespace kiln
