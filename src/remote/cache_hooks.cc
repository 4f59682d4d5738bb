// Where the remote layer plugs into base (internal/remote_cache_level.h): a Cache's second level
// is a RemoteLevel, and a child's environment holds no credentials of $KILN_REMOTE_CACHE. The
// hooks are installed before main by a static object of this file, which a static link takes
// because src/CMakeLists.txt names kiln_remote_cache_hooks as undefined (no symbol a program
// uses names this file).
#include <optional>

#include "internal/remote_cache_level.h"
#include "internal/remote_level.h"
#include "kiln/cache.h"
#include "kiln/remote_store.h"

// What the linker is told to take (`-Wl,--undefined=kiln_remote_cache_hooks`).
extern "C" {
extern const char kiln_remote_cache_hooks[];
const char kiln_remote_cache_hooks[] = "kiln remote cache hooks";
}

namespace kiln::internal {
namespace {

// Cache::open's second level: as `configured` says, else as the environment does.
std::shared_ptr<RemoteCacheLevel> level_for(const std::optional<RemoteCacheOptions>& configured,
                                            const std::filesystem::path& cache_directory) {
  std::optional<RemoteCacheOptions> remote =
      configured ? configured : RemoteCacheOptions::from_environment();
  if (!remote || remote->url.empty()) return nullptr;
  (void)RemoteStoreOptions::parse(remote->url);  // a URL it cannot read is the caller's error
  std::shared_ptr<RemoteLevel> level = RemoteLevel::of(*remote);
  level->remember_faults_in(cache_directory);
  return level;
}

[[maybe_unused]] const bool kInstalled = [] {
  install_remote_cache_hooks(
      {.level = &level_for, .child_environment = &child_remote_cache_environment});
  return true;
}();

}  // namespace
}  // namespace kiln::internal
