// The cache's second level (kiln/cache.h): entries on a shared server, addressed by content.
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
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/cache.h"
#include "kiln/remote_store.h"

namespace kiln::internal {

class RemoteLevel {
 public:
  // The process's level for `options` (options.url must not be empty).
  static std::shared_ptr<RemoteLevel> of(const RemoteCacheOptions& options);

  enum class Outcome { hit, miss, fault, rejected, off };
  struct Fetched {
    Outcome outcome = Outcome::off;
    std::string payload{};
  };
  // The payload stored under `key`, verified.
  Fetched fetch(std::string_view key);
  // Uploads the payload (read-write only; larger than max_object_bytes: skipped). Returns
  // whether it was stored.
  bool store(std::string_view key, std::string_view payload);

  bool read_write() const noexcept { return options_.read_write; }
  // "<redacted url> (read-only)".
  std::string description() const;
  RemoteCounters counters() const;
  // The one warning this level printed, "" when none.
  std::string warning() const;
  // A hit whose entry turned out to be pinned to another checkout: counted as a miss.
  void unusable_hit() {
    hits_.fetch_sub(1);
    misses_.fetch_add(1);
  }
  // Whether faults made this process stop asking the server.
  bool given_up() const noexcept { return given_up_.load(); }

  explicit RemoteLevel(RemoteCacheOptions options);

 private:
  RemoteStore* open_store();
  void fault(std::string_view what);
  void reject(std::string_view what);
  void succeeded() { consecutive_faults_.store(0); }

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
};

// What the store of `options` is opened with: its URL and files read, connecting limited to a
// third of an operation's limit (at most 1 s). Throws as RemoteStoreOptions::parse.
RemoteStoreOptions store_options(const RemoteCacheOptions& options);

// The action entry's name for `key`, and the text of an action entry naming content by its
// SHA-256 (hex) and size.
std::string remote_action_name(std::string_view key);
std::string remote_action_text(std::string_view content_sha256, std::uint64_t size);

}  // namespace kiln::internal
