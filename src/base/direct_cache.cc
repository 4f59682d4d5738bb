// DirectCache and parse_depfile (kiln/direct_cache.h).
#include "kiln/direct_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <mutex>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "internal/fd.h"
#include "internal/files.h"
#include "kiln/error.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::chrono::nanoseconds coarse_now() {
  // The clock the kernel stamps modification times with: a file written after this moment has a
  // time at or after it, which the fine-grained clock would not promise.
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

std::chrono::nanoseconds stamp(const timespec& t) {
  return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

}  // namespace

std::string content_key(std::string_view content) { return cache_key({content}); }

namespace {

// The most a header (or a source) may hold to be keyed: a larger one is not one a compile reads.
constexpr off_t kMaxKeyedFileBytes = off_t{64} << 20;

// The bytes of `path` when it is a regular file of at most kMaxKeyedFileBytes; std::nullopt for
// anything else. A cache entry's header list is data from the cache (a remote server's, maybe):
// a line naming /dev/zero, a FIFO or a directory must be a miss at once, never an endless read or
// an open that waits for a writer. Opened without blocking (O_NONBLOCK: a FIFO's open returns at
// once) and judged by the descriptor; symbolic links are followed, as the compiler followed them
// (system headers are reached through links).
std::optional<std::string> read_regular_file(const fs::path& path) {
  internal::UniqueFd fd(internal::retry_eintr(
      [&] { return ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY); }));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size > kMaxKeyedFileBytes) {
    return std::nullopt;
  }
  std::string bytes;
  bytes.resize(static_cast<size_t>(st.st_size) + 1);  // + 1: the end is seen without growing
  size_t got = 0;
  // Read until the end, and past the size it had only up to the limit (a file still growing).
  for (;;) {
    if (got == bytes.size()) {
      if (bytes.size() > static_cast<size_t>(kMaxKeyedFileBytes)) return std::nullopt;
      bytes.resize(std::min(bytes.size() * 2, static_cast<size_t>(kMaxKeyedFileBytes) + 1));
    }
    ssize_t n = internal::retry_eintr(
        [&] { return ::read(fd.get(), bytes.data() + got, bytes.size() - got); });
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  return bytes;
}

// A file's content hash, remembered by this process while its inode, size and times stay the
// same: the headers many jobs share (stdio.h) are read once per build. Only a file last changed
// before the current tick of the kernel's clock is remembered: a later rewrite, even of the same
// size, then has other times.
std::optional<std::string> content_hash(const fs::path& path) {
  struct Seen {
    ino_t inode;
    off_t size;
    std::chrono::nanoseconds mtime;
    std::chrono::nanoseconds ctime;
    std::string hash;
  };
  static std::mutex mutex;
  static std::unordered_map<std::string, Seen> seen;
  struct stat st {};
  bool stated = ::stat(path.c_str(), &st) == 0;
  if (stated) {
    std::lock_guard lock(mutex);
    auto it = seen.find(path.string());
    if (it != seen.end() && it->second.inode == st.st_ino && it->second.size == st.st_size &&
        it->second.mtime == stamp(st.st_mtim) && it->second.ctime == stamp(st.st_ctim)) {
      return it->second.hash;
    }
  }
  if (stated && !S_ISREG(st.st_mode)) return std::nullopt;
  std::chrono::nanoseconds before = coarse_now();
  std::optional<std::string> content = read_regular_file(path);
  if (!content) return std::nullopt;
  std::string hash = content_key(*content);
  if (stated && stamp(st.st_ctim) < before && stamp(st.st_mtim) < before) {
    std::lock_guard lock(mutex);
    seen[path.string()] = {st.st_ino, st.st_size, stamp(st.st_mtim), stamp(st.st_ctim), hash};
  }
  return hash;
}

// Where file_content_identity remembers what it hashed, inside the cache's directory.
constexpr const char* kIdentitiesDirectory = "identities";

// content_key of the file's bytes, read through a mapping (a compiler library is 100 MB).
std::optional<std::string> mapped_content_key(const fs::path& path) {
  // Without blocking: a FIFO named as a tool must not hold the open until a writer comes.
  internal::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  if (st.st_size == 0) return content_key("");
  auto size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (map == MAP_FAILED) return std::nullopt;
  std::string key = content_key(std::string_view(static_cast<const char*>(map), size));
  ::munmap(map, size);
  return key;
}

}  // namespace

std::string file_content_identity(const fs::path& path, const Cache* memo) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::pair<std::string, std::string>> seen;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  std::string stamp_text =
      fmt::format("{} {} {} {} {} {}", path.string(), st.st_dev, st.st_ino, st.st_size,
                  stamp(st.st_mtim).count(), stamp(st.st_ctim).count());
  {
    std::lock_guard lock(mutex);
    auto it = seen.find(path.string());
    if (it != seen.end() && it->second.first == stamp_text) return it->second.second;
  }
  // Remembered beside the cache's entries (not one of them: never evicted for a kernel, never
  // counted), in its private directory.
  fs::path memo_file;
  if (memo != nullptr && memo->enabled()) {
    memo_file =
        memo->directory() / kIdentitiesDirectory / cache_key({"kiln-file-content-1", stamp_text});
  }
  std::optional<std::string> identity;
  if (!memo_file.empty()) {
    try {
      std::string text = internal::read_file(memo_file);
      if (text.starts_with("content:") && text.size() == 8 + 32) identity = std::move(text);
    } catch (const Error&) {  // NOLINT(bugprone-empty-catch): not remembered yet
    }
  }
  if (!identity) {
    std::chrono::nanoseconds before = coarse_now();
    std::optional<std::string> key = mapped_content_key(path);
    if (!key) return "";
    identity = "content:" + *key;
    // Remembered only when the file was last changed before this tick: see content_hash.
    if (stamp(st.st_ctim) >= before || stamp(st.st_mtim) >= before) return *identity;
    if (!memo_file.empty()) {
      try {
        (void)::mkdir(memo_file.parent_path().c_str(), 0700);  // private, as the cache
        internal::write_file_atomically(memo_file, *identity);
      } catch (const Error&) {  // NOLINT(bugprone-empty-catch): remembered in this process only
      }
    }
  }
  std::lock_guard lock(mutex);
  seen[path.string()] = {stamp_text, *identity};
  return *identity;
}

namespace {

// Whether the file's content or inode changed at or after `since` (or cannot be told).
bool changed_since(const fs::path& path, std::chrono::nanoseconds since) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return true;
  return stamp(st.st_mtim) >= since || stamp(st.st_ctim) >= since;
}

fs::path normal(const fs::path& path, const fs::path& cwd) {
  return (path.is_absolute() || cwd.empty() ? path : cwd / path).lexically_normal();
}

// The words of a depfile with continuations joined and escapes undone; a word that ends a rule's
// targets keeps its ':' so that prerequisites can be told from targets.
std::vector<std::string> depfile_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (c == '\\' && (next == '\n' || (next == '\r' && i + 2 < text.size()))) {
      flush();
      i += next == '\r' ? 2 : 1;
    } else if (c == '\\' && (next == ' ' || next == '#' || next == '\\')) {
      word += next;
      ++i;
    } else if (c == '$' && next == '$') {
      word += '$';
      ++i;
    } else if (c == '\n') {
      flush();
      words.emplace_back("\n");
    } else if (c == ' ' || c == '\t' || c == '\r') {
      flush();
    } else {
      word += c;
    }
  }
  flush();
  return words;
}

}  // namespace

std::vector<fs::path> parse_depfile(std::string_view text, const fs::path& cwd) {
  std::vector<fs::path> paths;
  std::set<fs::path> seen;
  bool in_prerequisites = false;
  for (std::string& word : depfile_words(text)) {
    if (word == "\n") {
      in_prerequisites = false;
      continue;
    }
    if (!in_prerequisites) {
      in_prerequisites = word.ends_with(':');  // "out.o:" or a lone ":"
      continue;
    }
    fs::path path = normal(word, cwd);
    if (seen.insert(path).second) paths.push_back(std::move(path));
  }
  return paths;
}

namespace {

// Each source with its content hash now; "" for one that cannot be read.
std::vector<std::pair<fs::path, std::string>> hashed_now(const std::vector<fs::path>& sources) {
  std::vector<std::pair<fs::path, std::string>> hashed;
  for (const fs::path& source : sources) {
    fs::path path = normal(source, fs::current_path());
    std::string hash = content_hash(path).value_or("");
    hashed.emplace_back(std::move(path), std::move(hash));
  }
  return hashed;
}

}  // namespace

DirectCache::DirectCache(const Cache& cache, std::string base_key,
                         const std::vector<fs::path>& sources)
    : DirectCache(cache, std::move(base_key), hashed_now(sources)) {}

DirectCache::DirectCache(const Cache& cache, std::string base_key,
                         const std::vector<std::pair<fs::path, std::string>>& hashed_sources)
    : cache_(cache), base_key_(std::move(base_key)) {
  started_ = coarse_now();
  for (const auto& [source, hash] : hashed_sources) {
    sources_.push_back(normal(source, fs::current_path()));
    source_hashes_.push_back(hash);
  }
}

std::string DirectCache::manifest_key() const { return cache_key({"kiln-direct-2", base_key_}); }

// One entry per key: "<hash> <path>\n" for each header the compiler read, an empty line, then
// the result's bytes. One file, not a manifest and a result apart: half the files to create,
// and no manifest whose result was evicted without it.
std::optional<std::string> DirectCache::get(CacheOrigin* origin) const {
  std::optional<std::string> entry = cache_.get(manifest_key(), origin);
  if (!entry) return std::nullopt;
  std::string_view rest = *entry;
  for (;;) {
    size_t end = rest.find('\n');
    if (end == std::string_view::npos) {
      if (origin != nullptr) *origin = CacheOrigin::none;
      return std::nullopt;
    }
    if (end == 0) break;  // the empty line: the result follows
    size_t space = rest.find(' ');
    if (space == std::string_view::npos || space > end) {
      if (origin != nullptr) *origin = CacheOrigin::none;
      return std::nullopt;
    }
    std::optional<std::string> hash =
        content_hash(cache_.resolved(rest.substr(space + 1, end - space - 1)));
    if (!hash || *hash != rest.substr(0, space)) {
      if (origin != nullptr) *origin = CacheOrigin::none;
      return std::nullopt;
    }
    rest.remove_prefix(end + 1);
  }
  return std::string(rest.substr(1));
}

bool DirectCache::put(const std::vector<fs::path>& headers, std::string_view bytes,
                      const std::vector<fs::path>& ignored) const {
  // Read again, never taken from what this process remembers of a file: the check that the
  // compile read what the key says.
  for (size_t i = 0; i < sources_.size(); ++i) {
    std::string now;
    try {
      now = content_key(internal::read_file(sources_[i]));
    } catch (const std::exception&) {
      return false;
    }
    if (now != source_hashes_[i]) return false;
  }
  std::vector<fs::path> skipped;
  for (const fs::path& dir : ignored) skipped.push_back(normal(dir, fs::current_path()));
  std::string manifest;
  for (const fs::path& header : headers) {
    if (std::find(sources_.begin(), sources_.end(), header) != sources_.end()) continue;
    if (std::any_of(skipped.begin(), skipped.end(), [&](const fs::path& dir) {
          fs::path relative = header.lexically_relative(dir);
          return !relative.empty() && *relative.begin() != "..";
        })) {
      continue;
    }
    if (header.string().find('\n') != std::string::npos) return false;
    std::optional<std::string> hash = content_hash(header);  // read, then stat: see the header
    if (!hash || changed_since(header, started_)) return false;
    // Under the base directory, relative to it: the same header in every checkout.
    manifest += *hash + ' ' + cache_.relocated(header.string()) + '\n';
  }
  manifest += '\n';
  manifest += bytes;
  cache_.put(manifest_key(), manifest);
  return true;
}

}  // namespace kiln
