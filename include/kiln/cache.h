// A content-addressed cache of compiled outputs, shared by every kiln process of one user.
//
//   kiln::Cache cache = kiln::Cache::open();          // $KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln
//   std::string key = kiln::cache_key({source, options, compiler_version});
//   std::string cubin = cache.get_or_make(key, [&] { return compile(); });
//
// Entries are files named by their key, each with a hash of its content that is checked on every
// read: a corrupt entry is a miss, and is replaced. Writes go to a temporary file renamed into
// place, so several processes making the same entry at once all get correct bytes and leave one
// entry. The directory must be the user's own and not writable by anyone else (kiln creates it
// 0700), and so must every directory above it (owned by root or the user, not writable by others
// unless sticky, like /tmp); otherwise opening it is an error, because a shared cache would let
// others plant code. open() holds the directory open and every later read, write and listing is
// relative to it, so swapping a directory on its path afterwards changes nothing. Temporary files
// of writers that died (or older than kStaleTemporaryMinutes) are removed by open() and eviction.
// Past `max_bytes`, the least recently used entries are evicted (the directory is measured after
// every max_bytes / 32 stored by this process, not after every store). KILN_NO_CACHE disables it.
//
// kiln's compile servers keep their private directories in it too (servers/<name>.d: the NVRTC
// server's precompiled headers). Their files count in stats(), their precompiled headers in
// max_bytes (evicted with the entries, least recently used first), and clear() removes them; a
// running server makes them again. A directory whose server is gone (killed, even by SIGKILL) is
// removed by stats(), clear(), eviction and the next server's start; a live server's never is.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

struct CacheOptions {
  // Empty: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln.
  std::filesystem::path directory{};
  // The total size entries may take before the least recently used are evicted.
  std::uint64_t max_bytes = std::uint64_t{2} << 30;
  // std::nullopt: enabled unless $KILN_NO_CACHE is set (to anything but "" or "0").
  std::optional<bool> enabled{};
};

// The hex digest (128-bit XXH3) of `parts`, each length-prefixed, so that no two different lists
// of parts share a key.
std::string cache_key(std::initializer_list<std::string_view> parts);

class Cache {
 public:
  // Resolves and (if needed) creates the directory. Throws UnusableDirectory naming the directory
  // when it is not a directory, not owned by this user, or writable by group or others, or naming
  // the ancestor that another user could change (or when no environment variable says where it
  // goes), SystemError when it cannot be made or opened.
  static Cache open(const CacheOptions& options = {});
  // A cache that stores nothing (what open() returns when disabled).
  static Cache disabled();

  bool enabled() const noexcept { return enabled_; }
  const std::filesystem::path& directory() const noexcept { return directory_; }

  // The entry's bytes, or std::nullopt on a miss (also when the entry is corrupt: it is removed).
  // A hit marks the entry as recently used.
  std::optional<std::string> get(std::string_view key) const;
  // Stores the entry (atomically) and evicts old entries past max_bytes. Errors writing the cache
  // are not the caller's problem: the entry is simply not stored.
  void put(std::string_view key, std::string_view bytes) const;
  // get(), or make() then put().
  std::string get_or_make(std::string_view key, const std::function<std::string()>& make) const;

  struct Stats {
    std::uint64_t entries = 0;
    std::uint64_t bytes = 0;
    // Files being written now, or left by writers that were killed (until reaped).
    std::uint64_t temporary_files = 0;
    std::uint64_t temporary_bytes = 0;
    // The compile servers' files (precompiled headers and what describes them).
    std::uint64_t server_files = 0;
    std::uint64_t server_bytes = 0;
  };
  // A temporary file this old is reaped even when its writer's pid seems alive (reused pids,
  // writers in another pid namespace); writing one entry never takes nearly this long.
  static constexpr int kStaleTemporaryMinutes = 15;
  Stats stats() const;
  // Removes every entry, stray temporary files and the servers' files; the directory stays.
  void clear() const;
  // Evicts now, as a store does now and then: for a writer of servers' files (which never
  // stores an entry) to keep the cache within max_bytes.
  void trim() const;
  std::uint64_t max_bytes() const noexcept { return max_bytes_; }

 private:
  Cache() = default;
  struct OpenDirectory;
  std::string entry_name(std::string_view key) const;
  void evict() const;

  bool enabled_ = false;
  std::filesystem::path directory_;
  // The directory as open() checked it, shared by copies of this Cache (closed with the last).
  std::shared_ptr<const OpenDirectory> open_;
  std::uint64_t max_bytes_ = 0;
  // Bytes this process stored since it last measured the directory, shared by copies of this
  // Cache: the directory is scanned again only once they pass max_bytes / 32, so storing N
  // entries costs O(N) rather than a scan per store (the cache may overshoot its size by that
  // much per process between scans).
  std::shared_ptr<std::atomic<std::uint64_t>> unmeasured_;
};

}  // namespace kiln
