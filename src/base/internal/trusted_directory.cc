#include "internal/trusted_directory.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <vector>

#include <fmt/format.h>

#include "kiln/error.h"

namespace kiln::internal {
namespace {

namespace fs = std::filesystem;

// Whether group `gid` is the effective user's private group: named like the user, and no
// other user listed as a member (other users whose primary group it is cannot be seen cheaply;
// a system that gives one group to several users as their primary group does not do so by
// naming it after one of them).
bool is_private_group(gid_t gid) {
  std::vector<char> buffer(16384);
  passwd pw{};
  passwd* user = nullptr;
  if (::getpwuid_r(::geteuid(), &pw, buffer.data(), buffer.size() / 2, &user) != 0 ||
      user == nullptr) {
    return false;
  }
  group gr{};
  group* found = nullptr;
  char* second_half = buffer.data() + buffer.size() / 2;
  if (::getgrgid_r(gid, &gr, second_half, buffer.size() / 2, &found) != 0 || found == nullptr) {
    return false;
  }
  if (std::string_view(found->gr_name) != user->pw_name) return false;
  for (char** member = found->gr_mem; *member != nullptr; ++member) {
    if (std::string_view(*member) != user->pw_name) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> why_others_can_write(const struct stat& st) {
  uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0) {
    return fmt::format("belongs to uid {}, not to you (uid {}) or root", st.st_uid, me);
  }
  if ((st.st_mode & S_ISVTX) != 0) return std::nullopt;
  if ((st.st_mode & S_IWOTH) != 0) {
    return fmt::format("is writable by everyone (mode {:04o})", st.st_mode & 07777);
  }
  if ((st.st_mode & S_IWGRP) != 0 && !is_private_group(st.st_gid)) {
    return fmt::format("is writable by its group (gid {}, mode {:04o})", st.st_gid,
                       st.st_mode & 07777);
  }
  return std::nullopt;
}

std::optional<UntrustedDirectory> find_untrusted_directory(const fs::path& dir, bool and_itself) {
  std::error_code ec;
  fs::path absolute = fs::absolute(dir, ec).lexically_normal();
  if (!absolute.has_filename()) absolute = absolute.parent_path();
  // As the kernel resolves it (a symlinked home, /tmp on macOS): the directories that matter
  // are the ones actually walked through.
  fs::path start = and_itself ? absolute : absolute.parent_path();
  fs::path resolved = fs::canonical(start, ec);
  if (ec) throw SystemError(fmt::format("resolve '{}'", start.string()), ec.value());
  std::vector<fs::path> chain;
  for (fs::path p = resolved;; p = p.parent_path()) {
    chain.push_back(p);
    if (p == p.root_path() || !p.has_relative_path()) break;
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    struct stat st {};
    if (::stat(it->c_str(), &st) != 0) {
      throw SystemError(fmt::format("stat '{}'", it->string()), errno);
    }
    if (std::optional<std::string> why = why_others_can_write(st)) {
      return UntrustedDirectory{*it, *why};
    }
  }
  return std::nullopt;
}

}  // namespace kiln::internal
