// The cache's second level (internal/remote_level.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <map>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "internal/fd.h"
#include "internal/files.h"
#include "internal/remote_level.h"
#include "internal/sha256.h"
#include "kiln/process.h"

namespace kiln {

namespace {

// A fault after this many in a row makes the process stop asking the server: a server that is
// down or stalls costs a build at most this many operation limits per thread.
constexpr int kFaultsBeforeGivingUp = 3;

constexpr std::string_view kActionMagic = "kiln-ac-1\n";

constexpr const char* kFaultsDirectory = "remote-faults";

std::int64_t now_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// Runs `op` (which never throws) on a thread of its own and waits for its result, unless the
// calling thread's RunScope has a cancel descriptor that becomes readable first (or its deadline
// passes): then std::nullopt at once, and `op` is left to end by itself. Without such a scope,
// `op` runs here.
template <typename T, typename Op>
std::optional<T> unless_cancelled(Op op) {
  const RunScope* scope = RunScope::current();
  int cancel_fd = scope != nullptr ? scope->limits().cancel_fd : -1;
  std::optional<std::chrono::steady_clock::time_point> deadline =
      scope != nullptr ? scope->limits().deadline : std::nullopt;
  if (cancel_fd < 0 && !deadline) return op();
  if (internal::readable(cancel_fd)) return std::nullopt;
  struct State {
    std::mutex mutex;
    std::condition_variable done;
    std::optional<T> value;
  };
  auto state = std::make_shared<State>();
  try {
    std::thread([state, op = std::move(op)]() mutable {
      T value = op();
      std::lock_guard lock(state->mutex);
      state->value = std::move(value);
      state->done.notify_all();
    }).detach();
  } catch (const std::system_error&) {  // no thread to be had: wait for the server here
    return op();
  }
  std::unique_lock lock(state->mutex);
  while (!state->value) {
    state->done.wait_for(lock, std::chrono::milliseconds(20));
    if (state->value) break;
    if (internal::readable(cancel_fd)) return std::nullopt;
    if (deadline && std::chrono::steady_clock::now() >= *deadline) return std::nullopt;
  }
  return std::move(state->value);
}

}  // namespace

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
    : options_(std::move(options)),
      name_(redacted_url(options_.url)),
      // The server as this process reaches it: another password or CA file is another server
      // (whose marks a fixed password does not inherit).
      mark_name_(sha256_hex(fmt::format("{}\n{}\n{}", options_.url,
                                        options_.credentials_file.value_or("").string(),
                                        options_.ca_file.value_or("").string()))) {}

void RemoteLevel::remember_faults_in(const std::filesystem::path& cache_directory) {
  std::lock_guard lock(mark_mutex_);
  if (fault_directory_.empty() && options_.fault_memory.count() > 0) {
    fault_directory_ = cache_directory / kFaultsDirectory;
  }
}

std::filesystem::path RemoteLevel::mark_path() const {
  std::lock_guard lock(mark_mutex_);
  return fault_directory_.empty() ? std::filesystem::path() : fault_directory_ / mark_name_;
}

namespace {

// The faults directory, made 0700 if need be and opened without following a symlink; invalid
// when it is not a directory of this user's that only they can write.
UniqueFd open_faults_directory(const std::filesystem::path& dir, bool create) {
  if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return UniqueFd();
  UniqueFd fd(retry_eintr(
      [&] { return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); }));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return UniqueFd();
  }
  return fd;
}

}  // namespace

void RemoteLevel::mark_fault() {
  std::filesystem::path mark = mark_path();
  if (mark.empty() || marked_.exchange(true)) return;
  UniqueFd dir = open_faults_directory(mark.parent_path(), true);
  if (!dir) return;
  try {  // the time is the file's own; the text is for a person who looks
    write_file_atomically_at(dir.get(), mark_name_,
                             fmt::format("{} failed; kiln skips it until this file is {} s old\n",
                                         name_, options_.fault_memory.count()),
                             0600, mark);
  } catch (const Error&) {  // NOLINT(bugprone-empty-catch): then each process finds out itself
  }
}

bool RemoteLevel::skipped_for_a_recent_fault() {
  std::int64_t until = skip_until_ns_.load();
  if (until == 0) return false;
  std::int64_t now = now_ns();
  if (until > 0 && now < until) return true;
  std::filesystem::path mark = mark_path();
  if (mark.empty()) return false;
  std::lock_guard lock(mark_mutex_);  // one thread looks; the others see what it found
  until = skip_until_ns_.load();
  if (until == 0 || (until > 0 && now < until)) return until != 0;
  UniqueFd dir = open_faults_directory(mark.parent_path(), false);
  struct stat st {};
  std::int64_t memory_ns = std::int64_t{options_.fault_memory.count()} * 1'000'000'000;
  std::int64_t marked_ns = 0;
  if (dir && ::fstatat(dir.get(), mark_name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISREG(st.st_mode)) {
    marked_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  }
  // A mark from the future (a clock set back) is not believed past one memory's length.
  if (marked_ns == 0 || now - marked_ns >= memory_ns || marked_ns - now >= memory_ns) {
    skip_until_ns_.store(0);
    return false;
  }
  skip_until_ns_.store(marked_ns + memory_ns);
  std::lock_guard warning_lock(warning_mutex_);
  if (warning_.empty()) {
    warning_ = fmt::format(
        "remote cache {}: skipped: it failed recently, {:.0f} s ago in another kiln process "
        "(kiln asks it again {} s after a failure; {}); building with the local cache",
        name_, static_cast<double>(std::max<std::int64_t>(now - marked_ns, 0)) / 1e9,
        options_.fault_memory.count(), mark.string());
    (void)std::fprintf(stderr, "kiln: warning: %s\n", warning_.c_str());
  }
  return true;
}

void RemoteLevel::succeeded() {
  consecutive_faults_.store(0);
  if (unmarked_.exchange(true)) return;
  std::filesystem::path mark = mark_path();
  if (mark.empty()) return;
  if (UniqueFd dir = open_faults_directory(mark.parent_path(), false)) {
    (void)::unlinkat(dir.get(), mark_name_.c_str(), 0);
  }
}

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
          .bytes_up = bytes_up_.load(),
          .seconds = static_cast<double>(nanoseconds_.load()) / 1e9};
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
    store_ = open_remote_store(RemoteStoreOptions::for_cache(options_));
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
  mark_fault();
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

namespace {

// Adds the time from its making to its end to `total`.
class Timed {
 public:
  explicit Timed(std::atomic<std::int64_t>& total)
      : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    total_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - start_)
                         .count());
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  std::atomic<std::int64_t>& total_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

RemoteLevel::Fetched RemoteLevel::fetch(std::string_view key) {
  if (given_up_.load() || skipped_for_a_recent_fault()) return {Outcome::off};
  Timed timed(nanoseconds_);
  std::optional<Fetched> fetched = unless_cancelled<Fetched>(
      [self = shared_from_this(), key = std::string(key)] { return self->fetch_now(key); });
  return fetched ? std::move(*fetched) : Fetched{Outcome::off};
}

bool RemoteLevel::store(std::string_view key, std::string_view payload) {
  if (!options_.read_write || payload.size() > options_.max_object_bytes || given_up_.load() ||
      skipped_for_a_recent_fault()) {
    return false;
  }
  Timed timed(nanoseconds_);
  return unless_cancelled<bool>(
             [self = shared_from_this(), key = std::string(key), payload = std::string(payload)] {
               return self->store_now(key, payload);
             })
      .value_or(false);
}

RemoteLevel::Fetched RemoteLevel::fetch_now(const std::string& key) {
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

bool RemoteLevel::store_now(const std::string& key, const std::string& payload) {
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
