#include "kiln/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "internal/cache_pins.h"
#include "internal/cache_tag.h"
#include "internal/fd.h"
#include "internal/files.h"
#include "internal/remote_cache_level.h"
#include "internal/server_directories.h"
#include "internal/trusted_directory.h"
#include "kiln/error.h"
#include "kiln/file_lock.h"
#include "kiln/settings.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// An entry file: this magic line, the payload's hash in hex, a newline, then the payload. The
// payload (what the remote level stores too) is a line naming the base directory the entry is
// pinned to ("" for none), then the entry's bytes.
constexpr std::string_view kMagic = "kiln-cache-2\n";
// The lookups counted by every process (Cache::Stats), and the lock its writers take.
constexpr const char* kCountersFile = "counters";
constexpr const char* kCountersLock = "counters.lock";
constexpr size_t kHashHex = 32;

using internal::env;

std::string hex128(const void* data, size_t size) {
  XXH128_hash_t h = XXH3_128bits(data, size);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

fs::path default_directory() {
  if (auto dir = settings::text("KILN_CACHE_DIR")) return *dir;
  if (auto xdg = env("XDG_CACHE_HOME")) return fs::path(*xdg) / "kiln";
  if (auto home = env("HOME")) return fs::path(*home) / ".cache" / "kiln";
  throw UnusableDirectory({},
                          "kiln cache: no KILN_CACHE_DIR, XDG_CACHE_HOME or HOME to put it under");
}

std::string refused(const fs::path& dir, std::string_view problem, std::string_view fix) {
  return fmt::format(
      "kiln cache: {} {}: refusing to use it, since others could plant compiled "
      "code; {}",
      dir.string(), problem, fix);
}

// Every directory above `dir` must be one only this user or root can change: otherwise its
// owner could swap `dir` for their own between the check and any later use.
void check_ancestors(const fs::path& dir) {
  if (auto bad = internal::find_untrusted_directory(dir, false)) {
    throw UnusableDirectory(
        bad->path,
        fmt::format("kiln cache: {} (above the cache directory {}) {}: refusing to use the cache "
                    "there, since whoever can change {} could swap the cache for one of theirs "
                    "and plant compiled code; set KILN_CACHE_DIR to a directory whose every "
                    "parent is yours or root's and not writable by others",
                    bad->path.string(), dir.string(), bad->why, bad->path.string()));
  }
}

// Creates `dir` (0700) if needed, checks it and its ancestors, and opens it: never through a
// symlink, and checked by the descriptor itself, so what was checked is what is used. An existing
// directory must be kiln's (internal/cache_tag.h): a user's directory is refused, untouched.
internal::UniqueFd open_directory_checked(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  check_ancestors(dir);
  bool created = ::mkdir(dir.c_str(), 0700) == 0;
  if (!created && errno != EEXIST) {
    throw SystemError(fmt::format("kiln cache: create {}", dir.string()), errno);
  }
  internal::UniqueFd fd(internal::retry_eintr(
      [&] { return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); }));
  if (!fd && (errno == ELOOP || errno == ENOTDIR)) {
    throw UnusableDirectory(dir, refused(dir, "is not a directory (a symlink or a file?)",
                                         "set KILN_CACHE_DIR to another place"));
  }
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) {
    throw SystemError(fmt::format("kiln cache: open {}", dir.string()), errno);
  }
  if (st.st_uid != ::geteuid()) {
    throw UnusableDirectory(
        dir,
        refused(dir, fmt::format("belongs to uid {}, not to you (uid {})", st.st_uid, ::geteuid()),
                "set KILN_CACHE_DIR to a directory of your own"));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw UnusableDirectory(
        dir, refused(dir,
                     fmt::format("is writable by {} (mode {:04o})",
                                 (st.st_mode & S_IWOTH) != 0 ? "everyone" : "its group",
                                 st.st_mode & 07777),
                     fmt::format("run `chmod 700 {}`", dir.string())));
  }
  // Never chmod-ed: an existing directory's mode is its owner's choice (KILN_CACHE_DIR=$HOME
  // made the home 0700). Readable by others, it shows them entry names only: entries are 0600.
  internal::claim_cache_directory(fd.get(), dir, created);
  return fd;
}

bool is_entry_name(std::string_view name) {
  return name.size() == kHashHex &&
         std::all_of(name.begin(), name.end(), [](char c) { return std::isxdigit(c) != 0; });
}

// What kiln's writers (and, as ".tmp.*", earlier versions') name files not yet renamed into place.
bool is_temporary_name(std::string_view name) {
  return name.starts_with(internal::kTemporaryPrefix) || name.starts_with(".tmp.");
}

// Whether a temporary file's writer is certainly gone: its pid (in the name) does not exist, or
// the file has not changed for kStaleTemporaryMinutes.
bool is_stale_temporary(std::string_view name, const struct stat& st) {
  std::optional<long> writer = internal::temporary_writer(name);
  if (writer && ::kill(static_cast<pid_t>(*writer), 0) == -1 && errno == ESRCH) return true;
  return ::time(nullptr) - st.st_mtim.tv_sec >= std::time_t{Cache::kStaleTemporaryMinutes} * 60;
}

// Calls `fn(name, status)` for every regular file in the directory open as `dir_fd` whose name
// `wanted` accepts (only those are stat'ed), read through a descriptor of its own so that
// concurrent listings do not share a position.
void for_each_file(int dir_fd, bool (*wanted)(std::string_view),
                   const std::function<void(const char*, const struct stat&)>& fn) {
  int own = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (own < 0) return;
  DIR* dir = ::fdopendir(own);
  if (dir == nullptr) {
    ::close(own);
    return;
  }
  while (const dirent* entry = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe): own stream
    if (!wanted(entry->d_name)) continue;
    struct stat st {};
    if (::fstatat(own, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    if (S_ISREG(st.st_mode)) fn(entry->d_name, st);
  }
  ::closedir(dir);  // closes `own`
}

bool is_entry_or_temporary_name(std::string_view name) {
  return is_entry_name(name) || is_temporary_name(name);
}

// Removes the temporary files whose writers are gone.
void reap_temporaries(int dir_fd) {
  std::vector<std::string> doomed;
  for_each_file(dir_fd, is_temporary_name, [&](const char* name, const struct stat& st) {
    if (is_stale_temporary(name, st)) doomed.emplace_back(name);
  });
  for (const std::string& name : doomed) (void)::unlinkat(dir_fd, name.c_str(), 0);
}

std::optional<std::string> read_entry(int dir_fd, const std::string& name) {
  internal::UniqueFd fd(internal::retry_eintr(
      [&] { return ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC); }));
  if (!fd) return std::nullopt;
  std::string bytes;
  std::vector<char> buffer(std::size_t{1} << 16);
  for (;;) {
    ssize_t n =
        internal::retry_eintr([&] { return ::read(fd.get(), buffer.data(), buffer.size()); });
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    bytes.append(buffer.data(), static_cast<size_t>(n));
  }
  return bytes;
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

namespace {

// The counters this process has not yet added to the directory's counters file.
struct Counts {
  std::atomic<std::uint64_t> local_hits{0}, local_misses{0};
  std::atomic<std::uint64_t> hits{0}, misses{0}, errors{0}, uploads{0}, rejected{0};
  std::atomic<std::uint64_t> bytes_down{0}, bytes_up{0};
};

constexpr std::array<std::string_view, 9> kCounterNames = {
    "local_hits", "local_misses", "remote_hits",       "remote_misses",  "remote_errors",
    "uploads",    "rejected",     "remote_bytes_down", "remote_bytes_up"};

std::array<std::uint64_t, 9> read_counters(const fs::path& file) {
  std::array<std::uint64_t, 9> values{};
  std::string text;
  try {
    text = internal::read_file(file);
  } catch (const Error&) {
    return values;
  }
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + at, end - at);
    at = end + 1;
    size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    for (size_t i = 0; i < kCounterNames.size(); ++i) {
      if (line.substr(0, space) != kCounterNames[i]) continue;
      try {
        values[i] = std::stoull(std::string(line.substr(space + 1)));
      } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): a damaged line counts 0
      }
    }
  }
  return values;
}

}  // namespace

struct Cache::OpenDirectory {
  internal::UniqueFd fd;
  fs::path directory;
  Counts counts;
  std::mutex flush_mutex;
  std::atomic<std::int64_t> last_flush_ns{0};
  // A forked child inherits the counts its parent has not added yet: only the parent adds them.
  pid_t owner = ::getpid();

  OpenDirectory(internal::UniqueFd open, fs::path dir)
      : fd(std::move(open)), directory(std::move(dir)) {}
  OpenDirectory(const OpenDirectory&) = delete;
  OpenDirectory& operator=(const OpenDirectory&) = delete;
  ~OpenDirectory() { flush(); }

  // Adds what this process counted to the counters file (under its lock); never throws.
  void flush() noexcept {
    if (::getpid() != owner) return;
    std::array<std::uint64_t, 9> delta = {
        counts.local_hits.exchange(0), counts.local_misses.exchange(0),
        counts.hits.exchange(0),       counts.misses.exchange(0),
        counts.errors.exchange(0),     counts.uploads.exchange(0),
        counts.rejected.exchange(0),   counts.bytes_down.exchange(0),
        counts.bytes_up.exchange(0)};
    if (std::all_of(delta.begin(), delta.end(), [](std::uint64_t v) { return v == 0; })) return;
    try {
      std::lock_guard lock(flush_mutex);
      FileLock file_lock(directory / kCountersLock);
      std::array<std::uint64_t, 9> values = read_counters(directory / kCountersFile);
      std::string text;
      for (size_t i = 0; i < values.size(); ++i) {
        text += fmt::format("{} {}\n", kCounterNames[i], values[i] + delta[i]);
      }
      internal::write_file_atomically_at(fd.get(), kCountersFile, text, std::nullopt,
                                         directory / kCountersFile);
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): counters are not worth a
      // failed compile; this process's counts are lost
    }
  }

  // flush() at most once a second while in use (and always at the end).
  void flush_now_and_then() noexcept {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    std::int64_t ns = static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
    std::int64_t last = last_flush_ns.load();
    if (ns - last < 1'000'000'000 || !last_flush_ns.compare_exchange_strong(last, ns)) return;
    if (last != 0) flush();
  }
};

Cache Cache::open(const CacheOptions& options) {
  bool enabled = options.enabled.value_or(!settings::flag("KILN_NO_CACHE"));
  if (!enabled) return disabled();
  Cache cache;
  cache.enabled_ = true;
  cache.directory_ = options.directory.empty() ? default_directory() : options.directory;
  cache.max_bytes_ = options.max_bytes;
  // The first store measures the directory: other processes may have filled it.
  cache.unmeasured_ = std::make_shared<std::atomic<std::uint64_t>>(options.max_bytes);
  cache.open_ =
      std::make_shared<OpenDirectory>(open_directory_checked(cache.directory_), cache.directory_);
  reap_temporaries(cache.open_->fd.get());
  cache.base_ = internal::base_directory_of(options.base_directory);
  // A setting it cannot read is the caller's error, as in the CLI (docs/remote-cache.md).
  // The level comes from the remote layer (internal/remote_cache_level.h).
  cache.remote_ = internal::remote_cache_level(options.remote, cache.directory_);
  return cache;
}

Cache Cache::local_only() const {
  Cache local = *this;
  local.remote_.reset();
  local.counted_ = false;
  return local;
}

Cache Cache::with_remote_check(
    std::function<std::optional<std::string>(std::string_view bytes)> check) const {
  Cache checked = *this;
  checked.check_ =
      std::make_shared<const std::function<std::optional<std::string>(std::string_view)>>(
          std::move(check));
  return checked;
}

std::string Cache::remote_description() const { return remote_ ? remote_->description() : ""; }

RemoteCounters Cache::remote_counters() const {
  return remote_ ? remote_->counters() : RemoteCounters{};
}

std::string Cache::entry_name(std::string_view key) const {
  if (!is_entry_name(key)) {
    throw InvalidArgument(fmt::format("kiln cache: '{}' is not a key (32 hex digits)", key));
  }
  return std::string(key);
}

std::optional<std::string> Cache::get_local(const std::string& name) const {
  int dir_fd = open_->fd.get();
  std::optional<std::string> file = read_entry(dir_fd, name);
  if (!file) return std::nullopt;
  size_t header = kMagic.size() + kHashHex + 1;
  bool intact = file->size() >= header && file->starts_with(kMagic) &&
                (*file)[header - 1] == '\n' &&
                file->compare(kMagic.size(), kHashHex,
                              hex128(file->data() + header, file->size() - header)) == 0;
  if (!intact) {
    (void)::unlinkat(dir_fd, name.c_str(), 0);  // corrupt: a miss, and the next put() replaces it
    return std::nullopt;
  }
  // Recently used, for eviction.
  (void)::utimensat(dir_fd, name.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
  return file->substr(header);
}

std::optional<std::string> Cache::get(std::string_view key, CacheOrigin* origin) const {
  if (origin != nullptr) *origin = CacheOrigin::none;
  if (!enabled_) return std::nullopt;
  std::string name = entry_name(key);
  Counts& counts = open_->counts;
  if (std::optional<std::string> payload = get_local(name)) {
    if (std::optional<std::string> bytes = internal::unpinned_bytes(std::move(*payload), base_)) {
      if (counted_) counts.local_hits.fetch_add(1);
      open_->flush_now_and_then();
      if (origin != nullptr) *origin = CacheOrigin::local;
      return bytes;
    }
  }
  if (counted_) counts.local_misses.fetch_add(1);
  if (!remote_) {
    open_->flush_now_and_then();
    return std::nullopt;
  }
  RemoteCacheLevel::Fetched fetched = remote_->fetch(key);
  using Outcome = RemoteCacheLevel::Outcome;
  switch (fetched.outcome) {
    case Outcome::hit:  // counted below, once it proves usable here
      break;
    case Outcome::miss:
      counts.misses.fetch_add(1);
      break;
    case Outcome::fault:
      counts.errors.fetch_add(1);
      break;
    case Outcome::rejected:
      counts.rejected.fetch_add(1);
      break;
    case Outcome::off:
      break;
  }
  if (fetched.outcome != Outcome::hit) {
    open_->flush_now_and_then();
    return std::nullopt;
  }
  std::optional<std::string> bytes = internal::unpinned_bytes(fetched.payload, base_);
  if (!bytes) {  // pinned to another checkout: what this one compiles will be stored instead
    remote_->unusable_hit();
    counts.misses.fetch_add(1);
    open_->flush_now_and_then();
    return std::nullopt;
  }
  if (check_) {
    if (std::optional<std::string> wrong = (*check_)(*bytes)) {
      remote_->rejected_hit(fmt::format("the entry for key {} holds {}", std::string(key), *wrong));
      counts.rejected.fetch_add(1);
      open_->flush_now_and_then();
      return std::nullopt;
    }
  }
  counts.hits.fetch_add(1);
  counts.bytes_down.fetch_add(fetched.payload.size());
  open_->flush_now_and_then();
  put_local(name, fetched.payload);
  if (origin != nullptr) *origin = CacheOrigin::remote;
  return bytes;
}

void Cache::put_local(const std::string& name, std::string_view payload) const {
  std::string entry;
  entry.reserve(kMagic.size() + kHashHex + 1 + payload.size());
  entry.append(kMagic)
      .append(hex128(payload.data(), payload.size()))
      .append(1, '\n')
      .append(payload);
  try {
    // Atomic: readers see the old entry or the new one, whole.
    internal::write_file_atomically_at(open_->fd.get(), name, entry, 0600, directory_ / name);
  } catch (const SystemError&) {
    return;  // not stored (cache.h: a failed store is not the caller's problem)
  }
  std::uint64_t threshold = std::max<std::uint64_t>(1, max_bytes_ / 32);
  std::uint64_t unmeasured = unmeasured_->fetch_add(payload.size()) + payload.size();
  if (unmeasured >= threshold) {
    unmeasured_->store(0);
    evict();
  }
}

void Cache::put(std::string_view key, std::string_view bytes) const {
  if (!enabled_) return;
  std::string name = entry_name(key);
  std::string payload = internal::pinned_payload(bytes, base_);
  put_local(name, payload);
  if (remote_ && remote_->store(key, payload)) {
    open_->counts.uploads.fetch_add(1);
    open_->counts.bytes_up.fetch_add(payload.size());
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
  for_each_file(open_->fd.get(), is_entry_or_temporary_name,
                [&](const char* name, const struct stat& st) {
                  if (is_entry_name(name)) {
                    ++stats.entries;
                    stats.bytes += static_cast<std::uint64_t>(st.st_size);
                  } else if (is_temporary_name(name)) {
                    ++stats.temporary_files;
                    stats.temporary_bytes += static_cast<std::uint64_t>(st.st_size);
                  }
                });
  for (const internal::ServerFile& file :
       internal::server_files(directory_ / internal::kServersDirectory)) {
    ++stats.server_files;
    stats.server_bytes += file.size;
  }
  open_->flush();
  std::array<std::uint64_t, 9> c = read_counters(directory_ / kCountersFile);
  stats.local_hits = c[0];
  stats.local_misses = c[1];
  stats.remote = {.hits = c[2],
                  .misses = c[3],
                  .errors = c[4],
                  .uploads = c[5],
                  .rejected = c[6],
                  .bytes_down = c[7],
                  .bytes_up = c[8]};
  return stats;
}

void Cache::clear() const {
  if (!enabled_) return;
  std::vector<std::string> doomed;
  for_each_file(open_->fd.get(), is_entry_or_temporary_name,
                [&](const char* name, const struct stat&) { doomed.emplace_back(name); });
  for (const std::string& name : doomed) (void)::unlinkat(open_->fd.get(), name.c_str(), 0);
  open_->flush();
  {
    FileLock lock(directory_ / kCountersLock);
    (void)::unlinkat(open_->fd.get(), kCountersFile, 0);
  }
  std::error_code ec;
  fs::remove_all(directory_ / "identities", ec);  // file_content_identity's memo
  // A live server makes its files again (a compile that holds one open keeps reading it).
  for (const internal::ServerFile& file :
       internal::server_files(directory_ / internal::kServersDirectory))
    (void)::unlink(file.path.c_str());
}

void Cache::trim() const {
  if (enabled_) evict();
}

void Cache::evict() const {
  struct Entry {
    std::string name;  // relative to the directory: a server's file is servers/<dir>/<name>
    std::uint64_t size;
    std::int64_t used_ns;  // modification time: a hit touches the entry, a use the server's file
  };
  int dir_fd = open_->fd.get();
  reap_temporaries(dir_fd);
  std::vector<Entry> entries;
  std::uint64_t total = 0;
  for_each_file(dir_fd, is_entry_name, [&](const char* name, const struct stat& st) {
    Entry e{name, static_cast<std::uint64_t>(st.st_size),
            static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
    total += e.size;
    entries.push_back(std::move(e));
  });
  for (const internal::ServerFile& file :
       internal::server_files(directory_ / internal::kServersDirectory)) {
    if (!file.remade) continue;
    entries.push_back(
        {file.path.lexically_relative(directory_).string(), file.size, file.modified_ns});
    total += file.size;
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used_ns < b.used_ns; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    if (::unlinkat(dir_fd, e.name.c_str(), 0) == 0) total -= e.size;
  }
}

}  // namespace kiln
