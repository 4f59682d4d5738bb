// The private directories kiln's servers keep in the cache: <cache>/servers/<name>.d, beside
// their sockets (<name>.sock). A server holds a FileLock on <cache>/servers/<name>.d.lock for its
// whole life (taken before it touches the directory; its forked children share it, so a child
// still writing keeps it too): the kernel drops it when they are gone, even by SIGKILL or the
// OOM killer. A directory whose lock is free belongs to nobody and is removed ("reaped") by the
// next server start and by the cache's stats(), clear() and eviction. A directory without a lock
// file (made by a kiln before these locks) is reaped when nothing listens on its socket and it
// has not changed for kLegacyIdleMinutes. Lock files stay (they are empty; removing a lock file
// that another process may be about to lock would let two hold "it").
//
// A server's *.pch files (precompiled headers) are caches it makes again when they are gone:
// kiln/cache.h counts them in its size, evicts them with its entries and removes them on clear().
//
//   std::optional<FileLock> mine = claim_server_directory(dir, std::chrono::seconds(10));
//   if (!mine) give_up();               // another server with this directory is still ending
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "kiln/file_lock.h"

namespace kiln::internal {

inline constexpr std::string_view kServersDirectory = "servers";
inline constexpr int kLegacyIdleMinutes = 60;

// Takes the lock of the server directory `dir` (waiting up to `timeout` for a server still
// ending, or a reaper), then makes `dir` anew, empty (0700). std::nullopt when the lock was not
// free in time; SystemError when it cannot be taken or the directory made.
std::optional<FileLock> claim_server_directory(const std::filesystem::path& dir,
                                               std::chrono::milliseconds timeout);

// Removes the directories in `servers` whose server is gone.
void reap_server_directories(const std::filesystem::path& servers);

struct ServerFile {
  std::filesystem::path path;
  std::uint64_t size = 0;
  std::int64_t modified_ns = 0;  // a server touches a cache file when it uses it
  bool remade = false;           // a *.pch file: the server makes it again when it is gone
};
// reap_server_directories(), then the regular files of the live servers' directories (their
// lock files left out).
std::vector<ServerFile> server_files(const std::filesystem::path& servers);

}  // namespace kiln::internal
