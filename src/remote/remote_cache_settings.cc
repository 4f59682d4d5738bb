// The remote cache's settings: RemoteCacheOptions::from_environment (kiln/cache.h) and what a
// child process gets of them (internal/remote_level.h's child_remote_cache_environment). Both
// read URLs with RemoteStoreOptions::parse, the registry's, which is why they live in the remote
// layer rather than beside Cache in base.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "internal/fd.h"
#include "internal/files.h"
#include "internal/remote_level.h"
#include "internal/sha256.h"
#include "kiln/cache.h"
#include "kiln/remote_store.h"
#include "kiln/settings.h"

namespace kiln {

std::optional<RemoteCacheOptions> RemoteCacheOptions::from_environment() {
  std::optional<std::string> url = settings::text("KILN_REMOTE_CACHE");
  if (!url) return std::nullopt;
  try {  // the URL's syntax only: the files it may name are read on first use
    (void)RemoteStoreOptions::parse(*url);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("KILN_REMOTE_CACHE: {}", e.what()));
  }
  RemoteCacheOptions options{.url = *url};
  options.read_write = settings::text("KILN_REMOTE_CACHE_MODE") == "read-write";
  if (auto file = settings::text("KILN_REMOTE_CACHE_CREDENTIALS")) options.credentials_file = *file;
  if (auto file = settings::text("KILN_REMOTE_CACHE_CA")) options.ca_file = *file;
  if (auto limit = settings::seconds("KILN_REMOTE_CACHE_TIMEOUT"))
    options.operation_timeout = *limit;
  if (auto memory = settings::seconds("KILN_REMOTE_CACHE_FAULT_MEMORY")) {
    options.fault_memory = std::chrono::duration_cast<std::chrono::seconds>(*memory);
  }
  return options;
}

namespace internal {

std::map<std::string, std::optional<std::string>> child_remote_cache_environment() {
  static std::mutex mutex;
  static std::string known_url;
  static std::map<std::string, std::optional<std::string>> known;
  std::optional<std::string> url = settings::text("KILN_REMOTE_CACHE");
  if (!url) return {};
  std::lock_guard lock(mutex);
  if (*url == known_url) return known;
  known_url = *url;
  known.clear();
  size_t start = url->find("://");
  if (start == std::string::npos) return known;
  start += 3;
  size_t end = std::min(url->find('/', start), url->size());
  size_t at = url->rfind('@', end == 0 ? 0 : end - 1);
  if (at == std::string::npos || at < start) return known;  // no user info
  known["KILN_REMOTE_CACHE"] = url->substr(0, start) + url->substr(at + 1);
  std::string line;
  try {
    RemoteStoreOptions parsed = RemoteStoreOptions::parse(*url);
    line = parsed.token                     ? *parsed.token
           : parsed.user && parsed.password ? *parsed.user + ":" + *parsed.password
           : parsed.password                ? *parsed.password
                                            : parsed.user.value_or("");
    Cache cache = Cache::open({.enabled = true, .remote = RemoteCacheOptions{}});
    std::filesystem::path dir = cache.directory() / "remote-credentials";
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return known;
    UniqueFd fd(retry_eintr(
        [&] { return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); }));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
      return known;
    }
    std::string name = sha256_hex(*url);
    write_file_atomically_at(fd.get(), name, line + "\n", 0600, dir / name);
    known["KILN_REMOTE_CACHE_CREDENTIALS"] = (dir / name).string();
  } catch (const Error&) {  // NOLINT(bugprone-empty-catch): the child gets the URL without them
  }
  return known;
}

}  // namespace internal
}  // namespace kiln
