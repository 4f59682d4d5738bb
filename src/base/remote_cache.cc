// The cache's second level (internal/remote_level.h) and its configuration (kiln/cache.h).
#include <unistd.h>

#include <cstdio>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "internal/files.h"
#include "internal/remote_level.h"
#include "internal/sha256.h"

namespace kiln {

namespace {

// A fault after this many in a row makes the process stop asking the server: a server that is
// down or stalls costs a build at most this many operation limits per thread.
constexpr int kFaultsBeforeGivingUp = 3;

constexpr std::string_view kActionMagic = "kiln-ac-1\n";

}  // namespace

std::optional<RemoteCacheOptions> RemoteCacheOptions::from_environment() {
  std::optional<std::string> url = internal::env("KILN_REMOTE_CACHE");
  if (!url) return std::nullopt;
  RemoteCacheOptions options{.url = *url};
  std::string mode = internal::env("KILN_REMOTE_CACHE_MODE").value_or("read-only");
  if (mode == "read-write") {
    options.read_write = true;
  } else if (mode != "read-only") {
    throw InvalidArgument(
        fmt::format("KILN_REMOTE_CACHE_MODE must be read-only or read-write, not '{}'", mode));
  }
  if (auto file = internal::env("KILN_REMOTE_CACHE_CREDENTIALS")) options.credentials_file = *file;
  if (auto file = internal::env("KILN_REMOTE_CACHE_CA")) options.ca_file = *file;
  if (auto seconds = internal::env("KILN_REMOTE_CACHE_TIMEOUT")) {
    double value = 0;
    try {
      size_t used = 0;
      value = std::stod(*seconds, &used);
      if (used != seconds->size()) value = -1;
    } catch (const std::exception&) {
      value = -1;
    }
    if (!(value > 0 && value <= 600)) {
      throw InvalidArgument(fmt::format(
          "KILN_REMOTE_CACHE_TIMEOUT must be a number of seconds in (0, 600], not '{}'", *seconds));
    }
    options.operation_timeout = std::chrono::milliseconds(static_cast<long>(value * 1000));
  }
  return options;
}

namespace internal {

std::string remote_action_name(std::string_view key) {
  Sha256 hash;
  hash.update(kActionMagic);
  hash.update(key);
  return hash.hex_digest();
}

std::string remote_action_text(std::string_view content_sha256, std::uint64_t size) {
  return fmt::format("{}{} {}\n", kActionMagic, content_sha256, size);
}

RemoteStoreOptions store_options(const RemoteCacheOptions& options) {
  RemoteStoreOptions store =
      RemoteStoreOptions::parse(options.url, options.credentials_file, options.ca_file);
  store.operation_timeout = options.operation_timeout;
  store.connect_timeout = std::min(std::chrono::milliseconds(1000), options.operation_timeout / 3);
  return store;
}

std::shared_ptr<RemoteLevel> RemoteLevel::of(const RemoteCacheOptions& options) {
  struct Known {
    pid_t pid;
    std::shared_ptr<RemoteLevel> level;
  };
  static std::mutex mutex;
  static std::map<std::string, Known>* known = new std::map<std::string, Known>();  // never freed:
  // a level may be in use by a thread while static destructors run at exit
  std::string id = fmt::format("{}\n{}\n{}\n{}\n{}\n{}", options.url, options.read_write,
                               options.credentials_file.value_or("").string(),
                               options.ca_file.value_or("").string(), options.max_object_bytes,
                               options.operation_timeout.count());
  std::lock_guard lock(mutex);
  auto it = known->find(id);
  if (it != known->end() && it->second.pid == ::getpid()) return it->second.level;
  if (it != known->end()) {
    // A forked child: the parent's connections are the parent's; never use or close them.
    new std::shared_ptr<RemoteLevel>(std::move(it->second.level));  // NOLINT: left on purpose
    known->erase(it);
  }
  auto level = std::make_shared<RemoteLevel>(options);
  known->emplace(id, Known{::getpid(), level});
  return level;
}

RemoteLevel::RemoteLevel(RemoteCacheOptions options)
    : options_(std::move(options)), name_(redacted_url(options_.url)) {}

std::string RemoteLevel::description() const {
  return fmt::format("{} ({})", name_, options_.read_write ? "read-write" : "read-only");
}

RemoteCounters RemoteLevel::counters() const {
  return {.hits = hits_.load(),
          .misses = misses_.load(),
          .errors = errors_.load(),
          .uploads = uploads_.load(),
          .rejected = rejected_.load(),
          .bytes_down = bytes_down_.load(),
          .bytes_up = bytes_up_.load()};
}

std::string RemoteLevel::warning() const {
  std::lock_guard lock(warning_mutex_);
  return warning_;
}

RemoteStore* RemoteLevel::open_store() {
  std::lock_guard lock(open_mutex_);
  if (store_) return store_.get();
  if (given_up_.load()) return nullptr;
  try {
    store_ = open_remote_store(store_options(options_));
    return store_.get();
  } catch (const Error& e) {
    given_up_.store(true);
    errors_.fetch_add(1);
    std::lock_guard warning_lock(warning_mutex_);
    if (warning_.empty()) {
      warning_ =
          fmt::format("remote cache {}: {}; building with the local cache only", name_, e.what());
      (void)std::fprintf(stderr, "kiln: warning: %s\n", warning_.c_str());
    }
    return nullptr;
  }
}

void RemoteLevel::fault(std::string_view what) {
  if (what.starts_with(name_ + ": ")) what.remove_prefix(name_.size() + 2);  // named once
  errors_.fetch_add(1);
  if (consecutive_faults_.fetch_add(1) + 1 >= kFaultsBeforeGivingUp) given_up_.store(true);
  std::lock_guard lock(warning_mutex_);
  if (!warning_.empty()) return;
  warning_ = fmt::format(
      "remote cache {}: {}; building on with the local cache (after {} failures in a row kiln "
      "stops asking it)",
      name_, what, kFaultsBeforeGivingUp);
  (void)std::fprintf(stderr, "kiln: warning: %s\n", warning_.c_str());
}

void RemoteLevel::reject(std::string_view what) {
  rejected_.fetch_add(1);
  std::lock_guard lock(warning_mutex_);
  if (warned_rejected_) return;
  warned_rejected_ = true;
  std::string line = fmt::format("remote cache {}: {}; not used, compiling instead", name_, what);
  if (warning_.empty()) warning_ = line;
  (void)std::fprintf(stderr, "kiln: warning: %s\n", line.c_str());
}

namespace {

// The content's hash and size an action entry names; std::nullopt when it is not one.
std::optional<std::pair<std::string, std::uint64_t>> parse_action(std::string_view text) {
  if (!text.starts_with(kActionMagic)) return std::nullopt;
  text.remove_prefix(kActionMagic.size());
  size_t space = text.find(' ');
  if (space != 64 || !text.ends_with('\n')) return std::nullopt;
  std::string hash(text.substr(0, space));
  if (hash.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  std::string_view digits = text.substr(space + 1, text.size() - space - 2);
  if (digits.empty() || digits.size() > 15 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  return std::pair{hash, std::stoull(std::string(digits))};
}

}  // namespace

RemoteLevel::Fetched RemoteLevel::fetch(std::string_view key) {
  if (given_up_.load()) return {Outcome::off};
  RemoteStore* store = open_store();
  if (store == nullptr) return {Outcome::off};
  std::string action = remote_action_name(key);
  try {
    std::optional<std::string> entry = store->get("ac", action);
    if (!entry) {
      succeeded();
      misses_.fetch_add(1);
      return {Outcome::miss};
    }
    bytes_down_.fetch_add(entry->size());
    std::optional<std::pair<std::string, std::uint64_t>> named = parse_action(*entry);
    if (!named) {
      reject(fmt::format("ac/{} is not a kiln action entry", action));
      return {Outcome::rejected};
    }
    if (named->second > options_.max_object_bytes) {
      succeeded();
      misses_.fetch_add(1);
      return {Outcome::miss};
    }
    std::optional<std::string> content = store->get("cas", named->first, named->second);
    succeeded();
    if (!content) {
      misses_.fetch_add(1);  // evicted by the server since: a miss like any other
      return {Outcome::miss};
    }
    bytes_down_.fetch_add(content->size());
    if (content->size() != named->second || sha256_hex(*content) != named->first) {
      reject(fmt::format(
          "cas/{} does not hold what its name says ({} bytes{})", named->first, content->size(),
          content->size() == named->second ? ", another SHA-256" : ", another size"));
      return {Outcome::rejected};
    }
    hits_.fetch_add(1);
    return {Outcome::hit, std::move(*content)};
  } catch (const Error& e) {
    fault(e.what());
    return {Outcome::fault};
  }
}

bool RemoteLevel::store(std::string_view key, std::string_view payload) {
  if (!options_.read_write || payload.size() > options_.max_object_bytes || given_up_.load()) {
    return false;
  }
  RemoteStore* store = open_store();
  if (store == nullptr) return false;
  try {
    std::string content = sha256_hex(payload);
    store->put("cas", content, payload);
    std::string action = remote_action_text(content, payload.size());
    store->put("ac", remote_action_name(key), action);
    succeeded();
    uploads_.fetch_add(1);
    bytes_up_.fetch_add(payload.size() + action.size());
    return true;
  } catch (const Error& e) {
    fault(e.what());
    return false;
  }
}

}  // namespace internal
}  // namespace kiln
