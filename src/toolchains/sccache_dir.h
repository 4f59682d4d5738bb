// The private directory of one of kiln's sccache servers (kiln/sccache.h): its socket, logs and
// scratch files, "kiln-sccache-<pid>-<16 random hex digits>", mode 0700. It is made in $TMPDIR
// unless the socket's path would not fit a Unix socket address (about 100 bytes: a deep TMPDIR
// of a CI runner or a container), then in /run/user/<uid> when that is this user's private
// directory, else in /tmp. Its owner holds a lock on the file "owner" inside it for its whole
// life (and writes its pid there once it holds it): a directory whose lock is free was left by a
// kiln that was killed (SIGKILL, the OOM killer), and the next server's start removes it.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "kiln/file_lock.h"
#include "kiln/temp_directory.h"

namespace kiln::internal {

inline constexpr std::string_view kSccacheDirectoryPrefix = "kiln-sccache-";
// The file in a server's directory whose lock its owner holds.
inline constexpr std::string_view kSccacheOwnerFile = "owner";
// The longest name of a file in the directory that must be a socket.
inline constexpr std::string_view kSccacheSocketName = "server.sock";

// Where a server directory goes: the first of `candidates` (in order) whose socket path fits;
// std::nullopt when none does. A candidate that is not a private directory of this user, other
// than $TMPDIR and /tmp (whose entries are made private), is passed over.
std::filesystem::path sccache_directory_parent(
    const std::vector<std::filesystem::path>& candidates);
// $TMPDIR (or /tmp), /run/user/<uid>, /tmp: where server directories are made and reaped.
std::vector<std::filesystem::path> sccache_directory_candidates();

// A new server directory and the lock its owner holds (in this order, so that the directory is
// removed before the lock is released). Throws SystemError when it cannot be made, and Error
// when no candidate is short enough.
struct SccacheDirectory {
  FileLock owner;
  TempDirectory dir;
};
SccacheDirectory make_sccache_directory();

// Removes, in each of sccache_directory_candidates(), the server directories of this user whose
// owner is gone; a live server's directory is never touched.
void reap_sccache_directories();
// The same for the directories in `parent` (tests: a parent of their own).
void reap_sccache_directories_in(const std::filesystem::path& parent);

}  // namespace kiln::internal
