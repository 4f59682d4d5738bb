// Where kiln's sccache servers keep their sockets, and which directories a later kiln removes:
// only those whose owner is gone, told by the owner's lock.
#include "sccache_dir.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/error.h"
#include "testing/test_support.h"

namespace kiln::internal {
namespace {

namespace fs = std::filesystem;

fs::path deeper_than(const fs::path& root, std::size_t length) {
  fs::path deep = root;
  while (deep.string().size() < length) deep /= "deeper";
  return deep;
}

TEST(SccacheDirectory, ATmpdirTooDeepForASocketGivesWayToAShortOne) {
  TempDirectory root;
  fs::path deep = deeper_than(root.path(), 150);
  EXPECT_EQ(sccache_directory_parent({deep, "/tmp"}), "/tmp");
  EXPECT_EQ(sccache_directory_parent({root.path(), "/tmp"}), root.path());
  std::string why = testing::error_of([&] { (void)sccache_directory_parent({deep}); });
  EXPECT_NE(why.find("at most 107 bytes"), std::string::npos) << why;
  EXPECT_NE(why.find(deep.string()), std::string::npos) << why;
}

TEST(SccacheDirectory, IsMadeInTmpdirPrivateAndHeldByItsOwner) {
  TempDirectory tmp;
  testing::ScopedEnv tmpdir("TMPDIR", tmp.path().string());
  fs::path made;
  {
    SccacheDirectory dir = make_sccache_directory();
    made = dir.dir.path();
    EXPECT_EQ(made.parent_path(), tmp.path());
    EXPECT_TRUE(made.filename().string().starts_with(fmt::format("kiln-sccache-{}-", ::getpid())));
    EXPECT_EQ(fs::status(made).permissions() & fs::perms::all, fs::perms::owner_all);
    EXPECT_FALSE(FileLock::try_lock(made / kSccacheOwnerFile).has_value());
    EXPECT_EQ(read_file(made / kSccacheOwnerFile), fmt::format("{}\n", ::getpid()));
  }
  EXPECT_FALSE(fs::exists(made));
}

// The lock decides, not the pid in the name (this process's, alive, in every name here but one):
// a free lock with the owner's pid written in it means its owner died. An empty owner file may be
// an owner taking its lock right now; a directory without one is judged by the pid in its name.
TEST(SccacheDirectory, OnlyThoseWhoseOwnerIsGoneAreReaped) {
  TempDirectory parent;
  testing::ScopedEnv tmpdir("TMPDIR", parent.path().string());
  SccacheDirectory live = make_sccache_directory();
  auto make = [&](const std::string& name, std::optional<std::string> owner) {
    fs::path dir = parent.path() / name;
    fs::create_directory(dir);
    fs::permissions(dir, fs::perms::owner_all);
    if (owner) write_file(dir / kSccacheOwnerFile, *owner);
    return dir;
  };
  pid_t self = ::getpid();
  fs::path killed = make(fmt::format("kiln-sccache-{}-0000000000000001", self), "12345\n");
  fs::path taking = make(fmt::format("kiln-sccache-{}-0000000000000002", self), "");
  fs::path early = make("kiln-sccache-2147483646-0000000000000003", std::nullopt);
  fs::path starting = make(fmt::format("kiln-sccache-{}-0000000000000004", self), std::nullopt);
  fs::path other = make("kiln-other-0000000000000005", std::nullopt);
  fs::path target = make("target", "12345\n");
  fs::create_directory_symlink(target, parent.path() / "kiln-sccache-1-0000000000000006");

  reap_sccache_directories_in(parent.path());
  EXPECT_TRUE(fs::exists(live.dir.path()));
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_TRUE(fs::exists(taking));
  EXPECT_FALSE(fs::exists(early));
  EXPECT_TRUE(fs::exists(starting));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(target / kSccacheOwnerFile)) << "followed a symlink";
}

}  // namespace
}  // namespace kiln::internal
