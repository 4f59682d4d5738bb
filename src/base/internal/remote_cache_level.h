// The cache's second level as base sees it: the interface kiln/cache.h's Cache holds its remote
// level by, and the two hooks through which the layer that implements it (src/remote, above
// base) plugs into base without base depending on it:
//   level:             the second level of a Cache that Cache::open opens (from
//                      CacheOptions::remote, else $KILN_REMOTE_CACHE), or none;
//   child_environment: what a child process gets instead of the inherited $KILN_REMOTE_CACHE
//                      (make_environment in internal/spawn.h applies it).
//
// base is whole without them: until the hooks are installed, Cache::open makes caches without a
// second level and children inherit the environment as it is. libkiln always has the remote
// layer: src/remote/cache_hooks.cc installs the hooks before main, and src/CMakeLists.txt makes
// a static link take that file although no symbol of a program names it.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/cache.h"

namespace kiln {

// A level behind the local one (the remote layer's is internal::RemoteLevel, in
// src/remote/internal/remote_level.h, which documents the contract). Safe from many threads;
// its faults never throw: they are outcomes.
class RemoteCacheLevel {
 public:
  virtual ~RemoteCacheLevel() = default;

  enum class Outcome { hit, miss, fault, rejected, off };
  struct Fetched {
    Outcome outcome = Outcome::off;
    std::string payload{};
  };
  // The payload stored under `key`, verified.
  virtual Fetched fetch(std::string_view key) = 0;
  // Stores the payload when the level takes stores; returns whether it was stored.
  virtual bool store(std::string_view key, std::string_view payload) = 0;
  // "<redacted url> (read-only)".
  virtual std::string description() const = 0;
  virtual RemoteCounters counters() const = 0;
  // A hit whose entry turned out to be pinned to another checkout: counted as a miss.
  virtual void unusable_hit() = 0;
  // A verified hit the caller found to be another kind of object than it asked for: counted as
  // rejected (not a hit), warned about once.
  virtual void rejected_hit(std::string_view what) = 0;
};

namespace internal {

struct RemoteCacheHooks {
  // The second level for a cache in `cache_directory` that `configured` configures (std::nullopt:
  // the environment's settings); null when none. Throws InvalidArgument for a URL or setting it
  // cannot read.
  std::shared_ptr<RemoteCacheLevel> (*level)(const std::optional<RemoteCacheOptions>& configured,
                                             const std::filesystem::path& cache_directory) =
      nullptr;
  // Variables to set in a child's environment in place of the inherited ones; empty: none.
  std::map<std::string, std::optional<std::string>> (*child_environment)() = nullptr;
};

// Installs `hooks` for the process (the remote layer does, once, before main). Safe from many
// threads.
void install_remote_cache_hooks(const RemoteCacheHooks& hooks);

// The hooks' answers; none installed: no level, no variables.
std::shared_ptr<RemoteCacheLevel> remote_cache_level(
    const std::optional<RemoteCacheOptions>& configured,
    const std::filesystem::path& cache_directory);
std::map<std::string, std::optional<std::string>> remote_cache_child_environment();

}  // namespace internal
}  // namespace kiln
