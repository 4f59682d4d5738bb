// The remote layer's hooks into base (internal/remote_cache_level.h).
#include "internal/remote_cache_level.h"

#include <atomic>

namespace kiln::internal {
namespace {

// Function pointers, each written once (before main) and read by any thread.
std::atomic<decltype(RemoteCacheHooks::level)> installed_level{nullptr};
std::atomic<decltype(RemoteCacheHooks::child_environment)> installed_child_environment{nullptr};

}  // namespace

void install_remote_cache_hooks(const RemoteCacheHooks& hooks) {
  installed_level.store(hooks.level);
  installed_child_environment.store(hooks.child_environment);
}

std::shared_ptr<RemoteCacheLevel> remote_cache_level(
    const std::optional<RemoteCacheOptions>& configured,
    const std::filesystem::path& cache_directory) {
  auto level = installed_level.load();
  return level != nullptr ? level(configured, cache_directory) : nullptr;
}

std::map<std::string, std::optional<std::string>> remote_cache_child_environment() {
  auto child_environment = installed_child_environment.load();
  return child_environment != nullptr ? child_environment()
                                      : std::map<std::string, std::optional<std::string>>{};
}

}  // namespace kiln::internal
