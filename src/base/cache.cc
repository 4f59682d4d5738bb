#include "kiln/cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "internal/files.h"
#include "kiln/error.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// An entry file: this magic line, the content's hash in hex, a newline, then the content.
constexpr std::string_view kMagic = "kiln-cache-1\n";
constexpr size_t kHashHex = 32;

using internal::env;

std::string hex128(const void* data, size_t size) {
  XXH128_hash_t h = XXH3_128bits(data, size);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

fs::path default_directory() {
  if (auto dir = env("KILN_CACHE_DIR")) return *dir;
  if (auto xdg = env("XDG_CACHE_HOME")) return fs::path(*xdg) / "kiln";
  if (auto home = env("HOME")) return fs::path(*home) / ".cache" / "kiln";
  throw UnusableDirectory({},
                          "kiln cache: no KILN_CACHE_DIR, XDG_CACHE_HOME or HOME to put it under");
}

// Creates `dir` (0700) if needed and checks it is this user's own and private.
void check_directory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw SystemError(fmt::format("kiln cache: create {}", dir.string()), errno);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    throw SystemError(fmt::format("kiln cache: stat {}", dir.string()), errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    throw UnusableDirectory(
        dir, fmt::format("kiln cache: {} is not a directory (a symlink or a file?): refusing "
                         "to use it; set KILN_CACHE_DIR to another place",
                         dir.string()));
  }
  if (st.st_uid != ::geteuid()) {
    throw UnusableDirectory(
        dir,
        fmt::format(
            "kiln cache: {} belongs to uid {}, not to you (uid {}): refusing to use it, since its "
            "owner could plant compiled code; set KILN_CACHE_DIR to a directory of your own",
            dir.string(), st.st_uid, ::geteuid()));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw UnusableDirectory(
        dir, fmt::format("kiln cache: {} is writable by {} (mode {:04o}): refusing to use it, "
                         "since others could "
                         "plant compiled code; run `chmod 700 {}`",
                         dir.string(), (st.st_mode & S_IWOTH) != 0 ? "everyone" : "its group",
                         st.st_mode & 07777, dir.string()));
  }
  if ((st.st_mode & 077) != 0) (void)::chmod(dir.c_str(), 0700);  // readable by others: tighten
}

bool is_entry_name(const std::string& name) {
  return name.size() == kHashHex &&
         std::all_of(name.begin(), name.end(), [](char c) { return std::isxdigit(c) != 0; });
}

std::optional<std::string> read_whole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return std::move(bytes).str();
}

}  // namespace

std::string cache_key(std::initializer_list<std::string_view> parts) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  for (std::string_view part : parts) {
    std::uint64_t size = part.size();
    XXH3_128bits_update(&state, &size, sizeof size);
    XXH3_128bits_update(&state, part.data(), part.size());
  }
  XXH128_hash_t h = XXH3_128bits_digest(&state);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

Cache Cache::disabled() { return Cache(); }

Cache Cache::open(const CacheOptions& options) {
  bool enabled = options.enabled.value_or(env("KILN_NO_CACHE").value_or("0") == "0");
  if (!enabled) return disabled();
  Cache cache;
  cache.enabled_ = true;
  cache.directory_ = options.directory.empty() ? default_directory() : options.directory;
  cache.max_bytes_ = options.max_bytes;
  // The first store measures the directory: other processes may have filled it.
  cache.unmeasured_ = std::make_shared<std::atomic<std::uint64_t>>(options.max_bytes);
  check_directory(cache.directory_);
  return cache;
}

fs::path Cache::entry_path(std::string_view key) const {
  if (!is_entry_name(std::string(key))) {
    throw InvalidArgument(fmt::format("kiln cache: '{}' is not a key (32 hex digits)", key));
  }
  return directory_ / std::string(key);
}

std::optional<std::string> Cache::get(std::string_view key) const {
  if (!enabled_) return std::nullopt;
  fs::path path = entry_path(key);
  std::optional<std::string> file = read_whole(path);
  if (!file) return std::nullopt;
  size_t header = kMagic.size() + kHashHex + 1;
  bool intact = file->size() >= header && file->starts_with(kMagic) &&
                (*file)[header - 1] == '\n' &&
                file->compare(kMagic.size(), kHashHex,
                              hex128(file->data() + header, file->size() - header)) == 0;
  if (!intact) {
    std::error_code ec;
    fs::remove(path, ec);  // corrupt: a miss, and the next put() replaces it
    return std::nullopt;
  }
  (void)::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // recently used, for eviction
  return file->substr(header);
}

void Cache::put(std::string_view key, std::string_view bytes) const {
  if (!enabled_) return;
  fs::path path = entry_path(key);
  std::string entry;
  entry.reserve(kMagic.size() + kHashHex + 1 + bytes.size());
  entry.append(kMagic).append(hex128(bytes.data(), bytes.size())).append(1, '\n').append(bytes);
  try {
    // Atomic: readers see the old entry or the new one, whole.
    internal::write_file_atomically(path, entry);
  } catch (const SystemError&) {
    return;  // not stored (cache.h: a failed store is not the caller's problem)
  }
  std::uint64_t threshold = std::max<std::uint64_t>(1, max_bytes_ / 32);
  std::uint64_t unmeasured = unmeasured_->fetch_add(bytes.size()) + bytes.size();
  if (unmeasured >= threshold) {
    unmeasured_->store(0);
    evict();
  }
}

std::string Cache::get_or_make(std::string_view key,
                               const std::function<std::string()>& make) const {
  if (std::optional<std::string> hit = get(key)) return std::move(*hit);
  std::string bytes = make();
  put(key, bytes);
  return bytes;
}

Cache::Stats Cache::stats() const {
  Stats stats;
  if (!enabled_) return stats;
  std::error_code ec;
  for (fs::directory_iterator it(directory_, ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_entry_name(it->path().filename().string())) continue;
    ++stats.entries;
    stats.bytes += it->file_size(ec);
  }
  return stats;
}

void Cache::clear() const {
  if (!enabled_) return;
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (fs::directory_iterator it(directory_, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (is_entry_name(name) || name.starts_with(".kiln-tmp-") || name.starts_with(".tmp.")) {
      doomed.push_back(it->path());  // ".tmp.": what earlier versions named their temporary files
    }
  }
  for (const fs::path& path : doomed) fs::remove(path, ec);
}

void Cache::evict() const {
  struct Entry {
    fs::path path;
    std::uint64_t size;
    std::int64_t used_ns;  // modification time: a hit touches the entry
  };
  std::vector<Entry> entries;
  std::uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(directory_, ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_entry_name(it->path().filename().string())) continue;
    struct stat st {};
    if (::stat(it->path().c_str(), &st) != 0) continue;  // evicted by another process meanwhile
    Entry e{it->path(), static_cast<std::uint64_t>(st.st_size),
            static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
    total += e.size;
    entries.push_back(std::move(e));
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used_ns < b.used_ns; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    if (fs::remove(e.path, ec)) total -= e.size;
  }
}

}  // namespace kiln
