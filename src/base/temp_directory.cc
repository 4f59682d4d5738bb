#include "kiln/temp_directory.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "internal/fd.h"

namespace kiln {
namespace fs = std::filesystem;
namespace {

// Process-wide state. Never destroyed, so that TempDirectory objects with static storage can
// still consult it after the at-exit cleanup ran.
struct Registry {
  std::mutex mutex;
  std::set<fs::path> live;  // non-kept directories not yet removed
  bool cleaned_up = false;  // remove_tempdirs() ran
  fs::path debug_parent;    // this process's timestamped parent, once made
};

Registry& registry() {
  static Registry* r = [] {
    auto* created = new Registry;  // NOLINT(cppcoreguidelines-owning-memory): deliberately leaked
    // Should registration fail, directories still go with their objects; only the sweep is lost.
    (void)std::atexit(remove_tempdirs);
    return created;
  }();
  return *r;
}

std::atomic<bool> g_keep_for_debug{false};
std::atomic<unsigned> g_debug_sequence{0};

// The directory every process's debug parent lives in, made 0700 and checked to be ours.
fs::path shared_debug_root() {
  fs::path root = fs::temp_directory_path() / "kiln-debug-mode-tempdirs";
  if (::mkdir(root.c_str(), 0700) != 0 && errno != EEXIST) {
    throw SystemError(fmt::format("mkdir '{}'", root.string()), errno);
  }
  struct stat st {};
  if (::lstat(root.c_str(), &st) != 0)
    throw SystemError(fmt::format("lstat '{}'", root.string()), errno);
  if (!S_ISDIR(st.st_mode)) {
    throw UnusableDirectory(
        root, fmt::format("'{}' is not a directory (a symbolic link or a file is there): "
                          "refusing to keep debug directories in it; remove it",
                          root.string()));
  }
  if (st.st_uid != ::geteuid()) {
    throw UnusableDirectory(
        root, fmt::format("'{}' belongs to uid {}, not to this user (uid {}): another user "
                          "could tamper with kept directories; remove it or set TMPDIR",
                          root.string(), st.st_uid, ::geteuid()));
  }
  if ((st.st_mode & 0022) != 0) {
    throw UnusableDirectory(
        root, fmt::format("'{}' is writable by other users (mode {:o}): refusing to keep "
                          "debug directories in it; chmod 700 it",
                          root.string(), st.st_mode & 07777));
  }
  return root;
}

// This process's timestamped parent; made on first use. Caller holds the registry mutex.
const fs::path& debug_parent(Registry& r) {
  if (r.debug_parent.empty()) {
    std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char stamp[32];
    if (std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H-%M-%S", &local) == 0) stamp[0] = '\0';
    std::string pattern = (shared_debug_root() / fmt::format("{}___XXXXXX", stamp)).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw SystemError(fmt::format("mkdtemp '{}'", pattern), errno);
    r.debug_parent = pattern;
  }
  return r.debug_parent;
}

fs::path make_directory(const TempDirectoryOptions& options, bool keep, Registry& r) {
  if (!options.custom_path.empty()) {
    if (::mkdir(options.custom_path.c_str(), 0700) != 0) {
      throw SystemError(fmt::format("mkdir '{}'", options.custom_path.string()), errno);
    }
    return options.custom_path;
  }
  if (keep) {
    fs::path dir = debug_parent(r) / fmt::format("{:05d}", g_debug_sequence.fetch_add(1));
    if (::mkdir(dir.c_str(), 0700) != 0)
      throw SystemError(fmt::format("mkdir '{}'", dir.string()), errno);
    return dir;
  }
  std::string pattern = (fs::temp_directory_path() / "kiln-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw SystemError(fmt::format("mkdtemp '{}'", pattern), errno);
  return pattern;
}

// Removes a directory tree; returns the error instead of throwing.
std::error_code remove_tree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  return ec;
}

}  // namespace

DirectoryCreatedPastAtExit::DirectoryCreatedPastAtExit()
    : InvalidState("cannot create a temporary directory: the process-exit cleanup already ran") {}

TempDirectory::TempDirectory(const TempDirectoryOptions& options)
    : keep_(options.keep_for_debug.value_or(g_keep_for_debug.load())) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.cleaned_up) throw DirectoryCreatedPastAtExit();
  path_ = make_directory(options, keep_, r);
  if (!keep_) r.live.insert(path_);
}

TempDirectory::TempDirectory(TempDirectory&& other) noexcept
    : path_(std::exchange(other.path_, {})), keep_(other.keep_) {}

TempDirectory& TempDirectory::operator=(TempDirectory&& other) noexcept {
  if (this != &other) {
    try {
      remove();
    } catch (...) {  // NOLINT(bugprone-empty-catch): best effort, as in the destructor
    }
    path_ = std::exchange(other.path_, {});
    keep_ = other.keep_;
  }
  return *this;
}

TempDirectory::~TempDirectory() {
  try {
    remove();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor cannot report; remove() can
  }
}

fs::path TempDirectory::relpath(std::string_view name) const { return path_ / name; }

std::vector<std::string> TempDirectory::listdir() const {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(path_)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void TempDirectory::remove() {
  if (path_.empty()) return;
  if (keep_) {
    path_.clear();
    return;
  }
  Registry& r = registry();
  {
    std::lock_guard lock(r.mutex);
    if (r.live.erase(path_) == 0) {  // the exit cleanup already took it
      path_.clear();
      return;
    }
  }
  if (std::error_code ec = remove_tree(path_)) {
    std::lock_guard lock(r.mutex);
    r.live.insert(path_);  // still there: the exit cleanup will try again
    throw SystemError(fmt::format("remove '{}'", path_.string()), ec.value());
  }
  path_.clear();
}

TempDirectory tempdir(const fs::path& custom_path, std::optional<bool> keep_for_debug) {
  return TempDirectory({.custom_path = custom_path, .keep_for_debug = keep_for_debug});
}

KeepForDebug::KeepForDebug(bool keep) : previous_(g_keep_for_debug.exchange(keep)) {}
KeepForDebug::~KeepForDebug() { g_keep_for_debug.store(previous_); }

KeepForDebug set_keep_for_debug(bool keep) { return KeepForDebug(keep); }

bool keep_for_debug() { return g_keep_for_debug.load(); }

void remove_tempdirs() {
  Registry& r = registry();
  std::set<fs::path> doomed;
  {
    std::lock_guard lock(r.mutex);
    if (r.cleaned_up) return;
    r.cleaned_up = true;
    doomed.swap(r.live);
  }
  for (const fs::path& path : doomed) remove_tree(path);
}

// ---- cleanup on SIGINT / SIGTERM ----
//
// The handler only writes the signal number to a pipe (async-signal-safe). A watcher thread
// reads it, removes the directories (which needs locks and allocation, so cannot happen in the
// handler), restores the host's previous disposition and raises the signal again.
namespace {

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM};
int g_signal_pipe_write = -1;
struct sigaction g_previous[2];

void on_cleanup_signal(int signal) {
  int saved_errno = errno;
  auto byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe_write, &byte, 1);
  errno = saved_errno;
}

void watch_cleanup_signals(int read_fd) {
  unsigned char byte = 0;
  while (internal::retry_eintr([&] { return ::read(read_fd, &byte, 1); }) == 1) {
    remove_tempdirs();
    for (size_t i = 0; i < std::size(kCleanupSignals); ++i) {
      if (kCleanupSignals[i] == byte) ::sigaction(byte, &g_previous[i], nullptr);
    }
    ::kill(::getpid(), byte);
  }
}

}  // namespace

void cleanup_tempdirs_on_signals() {
  static std::once_flag once;
  std::call_once(once, [] {
    registry();
    internal::Pipe pipe = internal::make_pipe();
    struct sigaction action {};
    action.sa_handler = on_cleanup_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    g_signal_pipe_write = pipe.write.release();
    std::thread(watch_cleanup_signals, pipe.read.release()).detach();
    for (size_t i = 0; i < std::size(kCleanupSignals); ++i) {
      if (::sigaction(kCleanupSignals[i], &action, &g_previous[i]) != 0) {
        throw SystemError("sigaction", errno);
      }
      // A signal the host ignores (nohup, a shell's background job) stays ignored.
      if (g_previous[i].sa_handler == SIG_IGN)
        ::sigaction(kCleanupSignals[i], &g_previous[i], nullptr);
    }
  });
}

}  // namespace kiln
