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
// 0700 and tags it with a CACHEDIR.TAG; an existing directory is never chmod-ed, and one that
// holds anything but kiln's files and no kiln tag, such as $HOME, is refused untouched), and so
// must every directory above it (owned by root or the user, not writable by others
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
//
// A second level on a shared server (kiln/remote_store.h: the servers kiln::remote_backends()
// lists) when one is configured ($KILN_REMOTE_CACHE, or CacheOptions::remote): a local miss asks
// the server, and what it serves is verified by its SHA-256 and written to the local level; a
// store goes to the server too when the mode is read-write (the default is read-only: what a
// read-write cache holds is code its writers chose). The server's faults never fail a caller:
// each operation has a time limit, the first fault is one warning on stderr, and after a few the
// server is not asked again by this process. See docs/remote-cache.md.
//
// Keys travel between machines: what a caller keys relative to the base directory (relocated())
// is the same in every checkout of a project. An entry whose bytes name the base directory's
// absolute path (a __FILE__, debug information) is pinned to it: another base gets a miss.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

// The remote level as a Cache holds it (src/base/internal/remote_cache_level.h; the remote
// layer, src/remote, implements it).
class RemoteCacheLevel;

// The shared second level (docs/remote-cache.md).
struct RemoteCacheOptions {
  // The server: a URL of one of the forms kiln::remote_backends() lists (kiln/remote_store.h),
  // such as redis://cache:6379/0 or https://cache/kiln.
  std::string url{};
  // Read-write: stores go to the server too. Read-only (the default): only fetches.
  bool read_write = false;
  // A file holding the credentials (one line: "user:password", or a token/password alone).
  std::optional<std::filesystem::path> credentials_file{};
  // HTTPS: the certificates to trust.
  std::optional<std::filesystem::path> ca_file{};
  // Entries larger than this are not uploaded (nor fetched).
  std::uint64_t max_object_bytes = std::uint64_t{64} << 20;
  // Each operation's limit (connecting has a limit of its own, a third of this, at most 1 s).
  std::chrono::milliseconds operation_timeout{2000};
  // How long a server that failed is not asked by the user's other processes (a mark in the
  // cache directory, docs/remote-cache.md); 0: each process finds out for itself.
  std::chrono::seconds fault_memory{60};

  // $KILN_REMOTE_CACHE, $KILN_REMOTE_CACHE_MODE (read-only | read-write),
  // $KILN_REMOTE_CACHE_CREDENTIALS, $KILN_REMOTE_CACHE_CA, $KILN_REMOTE_CACHE_TIMEOUT (seconds),
  // $KILN_REMOTE_CACHE_FAULT_MEMORY (seconds);
  // std::nullopt when $KILN_REMOTE_CACHE is unset. Throws InvalidArgument naming the variable
  // for a URL, mode or number of seconds it cannot read. (The remote layer defines it, in
  // src/remote/remote_cache_settings.cc: reading a URL is its registry's.)
  static std::optional<RemoteCacheOptions> from_environment();
};

// Where a lookup found its entry.
enum class CacheOrigin { none, local, remote };

// What the remote level did in this process (Cache::remote_counters) or, summed over every
// process, since the counters were last cleared (Cache::Stats).
struct RemoteCounters {
  std::uint64_t hits = 0, misses = 0, errors = 0, uploads = 0, rejected = 0;
  std::uint64_t bytes_down = 0, bytes_up = 0;
  // Time spent waiting for the server, all threads together (this process's counters only;
  // 0 in Cache::Stats).
  double seconds = 0;
};

struct CacheOptions {
  // Empty: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln.
  std::filesystem::path directory{};
  // The total size entries may take before the least recently used are evicted.
  std::uint64_t max_bytes = std::uint64_t{2} << 30;
  // std::nullopt: enabled unless $KILN_NO_CACHE is set (to anything but "" or "0").
  std::optional<bool> enabled{};
  // std::nullopt: RemoteCacheOptions::from_environment(); an empty url: no second level.
  std::optional<RemoteCacheOptions> remote{};
  // Paths under it are keyed relative to it (relocated()). Empty: $KILN_BASE_DIR, else the
  // working directory.
  std::filesystem::path base_directory{};
};

// The hex digest (128-bit XXH3) of `parts`, each length-prefixed, so that no two different lists
// of parts share a key.
std::string cache_key(std::initializer_list<std::string_view> parts);

class Cache {
 public:
  // Resolves and (if needed) creates the directory. Throws UnusableDirectory naming the directory
  // when it is not a directory, not owned by this user, or writable by group or others, or naming
  // the ancestor that another user could change (or when no environment variable says where it
  // goes), SystemError when it cannot be made or opened, InvalidArgument for a remote cache URL
  // (options.remote's or $KILN_REMOTE_CACHE's) or setting it cannot read.
  static Cache open(const CacheOptions& options = {});
  // A cache that stores nothing (what open() returns when disabled).
  static Cache disabled();

  bool enabled() const noexcept { return enabled_; }
  const std::filesystem::path& directory() const noexcept { return directory_; }

  // The entry's bytes, or std::nullopt on a miss (also when the entry is corrupt: it is removed,
  // or pinned to another base directory). A hit marks the entry as recently used. On a local
  // miss the remote level is asked; its hit is stored locally. `origin` says which level hit.
  std::optional<std::string> get(std::string_view key, CacheOrigin* origin = nullptr) const;
  // Stores the entry (atomically) and evicts old entries past max_bytes; uploads it when the
  // remote level is read-write. Errors writing either level are not the caller's problem: the
  // entry is simply not stored there.
  void put(std::string_view key, std::string_view bytes) const;
  // This cache without its remote level, and uncounted in Stats: for what only this machine's
  // tools decide (a tool's version), never worth a round trip.
  Cache local_only() const;
  // `text` with the base directory's absolute path (where it is a whole path prefix) replaced by
  // "$BASE": what a key holds of a path, the same in every checkout.
  std::string relocated(std::string_view text) const;
  // The inverse for one path relocated() made: "$BASE/x" is base/x; others are returned as is.
  std::filesystem::path resolved(std::string_view relocated_path) const;
  const std::filesystem::path& base_directory() const noexcept { return base_; }
  // The remote level's URL (redacted) and mode ("read-only", "read-write"); "" when none.
  std::string remote_description() const;
  // What this process's remote level did so far (all Cache objects on one server share it).
  RemoteCounters remote_counters() const;
  // This cache with a check of what the remote level serves: `check` gets a remote hit's bytes
  // (what get() would return) and says why they cannot be what the caller asked for ("an x86-64
  // ELF shared object, not PTX"), or std::nullopt when they can be. A hit it refuses is a miss
  // counted as rejected, warned about once, and not written to the local level.
  Cache with_remote_check(
      std::function<std::optional<std::string>(std::string_view bytes)> check) const;
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
    // Lookups of every process since the last clear(): local hits and misses, and the remote
    // level's counters.
    std::uint64_t local_hits = 0, local_misses = 0;
    RemoteCounters remote{};
  };
  // A temporary file this old is reaped even when its writer's pid seems alive (reused pids,
  // writers in another pid namespace); writing one entry never takes nearly this long.
  static constexpr int kStaleTemporaryMinutes = 15;
  Stats stats() const;
  // Removes every entry, stray temporary files, the servers' files and the counters; the
  // directory stays. The remote level is not touched.
  void clear() const;
  // Evicts now, as a store does now and then: for a writer of servers' files (which never
  // stores an entry) to keep the cache within max_bytes.
  void trim() const;
  std::uint64_t max_bytes() const noexcept { return max_bytes_; }

 private:
  Cache() = default;
  struct OpenDirectory;
  std::string entry_name(std::string_view key) const;
  std::optional<std::string> get_local(const std::string& name) const;
  void put_local(const std::string& name, std::string_view payload) const;
  void evict() const;

  bool enabled_ = false;
  std::filesystem::path directory_;
  // The directory as open() checked it, shared by copies of this Cache (closed with the last).
  std::shared_ptr<OpenDirectory> open_;
  std::uint64_t max_bytes_ = 0;
  // Bytes this process stored since it last measured the directory, shared by copies of this
  // Cache: the directory is scanned again only once they pass max_bytes / 32, so storing N
  // entries costs O(N) rather than a scan per store (the cache may overshoot its size by that
  // much per process between scans).
  std::shared_ptr<std::atomic<std::uint64_t>> unmeasured_;
  std::filesystem::path base_;
  // Whether lookups count in the directory's counters (not those of local_only()).
  bool counted_ = true;
  // The second level, shared by every Cache of this process on the same server; null when none.
  std::shared_ptr<RemoteCacheLevel> remote_;
  // with_remote_check()'s check; null when none.
  std::shared_ptr<const std::function<std::optional<std::string>(std::string_view)>> check_;
};

}  // namespace kiln
