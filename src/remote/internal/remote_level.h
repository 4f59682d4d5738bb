// The cache's second level (kiln/cache.h; base's interface RemoteCacheLevel, in
// src/base/internal/remote_cache_level.h): entries on a shared server, addressed by content.
//
// An entry's payload (what the local level holds under a key) is stored as two objects:
//   ac/<sha256("kiln-ac-1" key)>   "kiln-ac-1\n<sha256 of the payload> <its size>\n"
//   cas/<sha256 of the payload>    the payload
// A fetch reads the action entry, then the content it names, and serves it only when its size
// and SHA-256 are what the action entry says: a corrupt, truncated or substituted object is a
// miss (a "rejected" object, reported once), never served. Identical payloads under different
// keys are stored once.
//
// One level per server (URL, mode and credentials) per process, shared by every Cache opened on
// it, so connections and counters outlive any one Cache; a forked child gets a level of its own
// (its parent's connections are never used, nor closed, by it).
//
// A thread whose RunScope (kiln/process.h) has a cancel descriptor (kiln build's jobs) never
// waits for the server past a cancel: the operation runs on a thread of its own, and when the
// descriptor becomes readable first the caller gets Outcome::off at once and the operation is
// abandoned (it ends by its own limit; nothing waits for it).
//
// A server this process gave up on (or whose first operation failed) is remembered for the
// user's other processes: <cache directory>/remote-faults/<sha256 of the server> (0700
// directory, the file's time is the failure's). A process that finds a mark younger than
// RemoteCacheOptions::fault_memory does not ask the server, says so once, and looks again once
// the mark is older; a success removes it.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "internal/remote_cache_level.h"
#include "kiln/cache.h"
#include "kiln/remote_store.h"

namespace kiln::internal {

class RemoteLevel final : public RemoteCacheLevel,
                          public std::enable_shared_from_this<RemoteLevel> {
 public:
  // The process's level for `options` (options.url must not be empty).
  static std::shared_ptr<RemoteLevel> of(const RemoteCacheOptions& options);

  // The payload stored under `key`, verified.
  Fetched fetch(std::string_view key) override;
  // Uploads the payload (read-write only; larger than max_object_bytes: skipped). Returns
  // whether it was stored.
  bool store(std::string_view key, std::string_view payload) override;

  bool read_write() const noexcept { return options_.read_write; }
  // "<redacted url> (read-only)".
  std::string description() const override;
  RemoteCounters counters() const override;
  // The one warning this level printed, "" when none.
  std::string warning() const;
  void unusable_hit() override {
    hits_.fetch_sub(1);
    misses_.fetch_add(1);
  }
  void rejected_hit(std::string_view what) override {
    hits_.fetch_sub(1);
    reject(what);
  }
  // Whether faults made this process stop asking the server.
  bool given_up() const noexcept { return given_up_.load(); }
  // Where faults are remembered across processes: `cache_directory`/remote-faults (the first
  // call of the process wins; none: faults are this process's alone).
  void remember_faults_in(const std::filesystem::path& cache_directory);

  explicit RemoteLevel(RemoteCacheOptions options);

 private:
  RemoteStore* open_store();
  Fetched fetch_now(const std::string& key);
  bool store_now(const std::string& key, const std::string& payload);
  // Whether a fresh mark of another process's fault says not to ask the server now.
  bool skipped_for_a_recent_fault();
  void mark_fault();
  std::filesystem::path mark_path() const;
  void fault(std::string_view what);
  void reject(std::string_view what);
  void succeeded();

  RemoteCacheOptions options_;
  std::string name_;
  std::mutex open_mutex_;
  std::unique_ptr<RemoteStore> store_;
  std::atomic<bool> given_up_{false};
  std::atomic<int> consecutive_faults_{0};
  mutable std::mutex warning_mutex_;
  std::string warning_;
  bool warned_rejected_ = false;
  std::atomic<std::uint64_t> hits_{0}, misses_{0}, errors_{0}, uploads_{0}, rejected_{0};
  std::atomic<std::uint64_t> bytes_down_{0}, bytes_up_{0};
  std::atomic<std::int64_t> nanoseconds_{0};  // waited for the server, all threads together
  // Fault memory: the directory ("" for none), the mark's name, until when (ns since the epoch)
  // a mark says to skip the server (-1: not looked at yet, 0: no mark), whether this process
  // marked or unmarked it already.
  mutable std::mutex mark_mutex_;
  std::filesystem::path fault_directory_;
  std::string mark_name_;
  std::atomic<std::int64_t> skip_until_ns_{-1};
  std::atomic<bool> marked_{false}, unmarked_{false};
};

// What a child process gets instead of the inherited $KILN_REMOTE_CACHE when that URL holds
// credentials (internal/spawn.h's make_environment applies it, through the hook of
// internal/remote_cache_level.h; remote_cache_settings.cc): the URL without its user info,
// and $KILN_REMOTE_CACHE_CREDENTIALS naming a file (0600, in <cache dir>/remote-credentials,
// 0700) that holds them, so that a compiler's environment never shows the password while a kiln
// child (a pool worker) still reaches the server. Empty when the URL has none (or is unset).
std::map<std::string, std::optional<std::string>> child_remote_cache_environment();

// The action entry's name for `key`, and the text of an action entry naming content by its
// SHA-256 (hex) and size.
std::string remote_action_name(std::string_view key);
std::string remote_action_text(std::string_view content_sha256, std::uint64_t size);

}  // namespace kiln::internal
