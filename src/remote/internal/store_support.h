// What the remote backends' stores (redis_store.cc, http_store.cc) share: the check of object
// names, a pool of idle connections, a host looked up once within a limit, the limits on replies
// and the guard that keeps SIGPIPE from the host (store_support.cc, host_resolver.cc).
#pragma once

#include <signal.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/remote_store.h"

namespace kiln::internal {

// Throws InvalidArgument (naming `store`) unless `kind` is 1 to 32 of [a-z0-9_-] and `hex` 1 to
// 128 lowercase hex digits: names that can go into a URL path or a Redis key as they are.
void check_object_name(std::string_view store, std::string_view kind, std::string_view hex);

// Connections not in use, for the next caller to take: a caller takes one (or, when none is idle,
// makes its own), and gives it back only when it is known to be in a clean state, so one that
// failed in any way is closed rather than reused. Safe from many threads.
template <typename Handle>
class IdlePool {
 public:
  using Owned = std::unique_ptr<Handle, void (*)(Handle*)>;
  // At most this many idle connections are kept; more are closed as they are given back.
  static constexpr std::size_t kMaxIdle = 32;

  // An idle connection, or an empty one (with a null pointer) when none is.
  Owned take() {
    std::lock_guard lock(mutex_);
    if (idle_.empty()) return Owned(nullptr, nullptr);
    Owned handle = std::move(idle_.back());
    idle_.pop_back();
    return handle;
  }
  void give_back(Owned handle) {
    if (!handle) return;
    std::lock_guard lock(mutex_);
    if (idle_.size() < kMaxIdle) idle_.push_back(std::move(handle));
  }

 private:
  std::mutex mutex_;
  std::vector<Owned> idle_;
};

// One address of a host, numeric: ready for connect(2), and as text for libcurl's
// CURLOPT_RESOLVE ("192.0.2.7", "[2001:db8::7]").
struct HostAddress {
  sockaddr_storage address{};
  socklen_t length = 0;
  std::string text{};
};

// A host's addresses, looked up once for a store's life. A numeric host needs no lookup. Else
// the first caller starts getaddrinfo on a thread of its own and every caller waits for it at
// most until its deadline; a lookup still under way then is abandoned (the thread finishes on
// its own and is never joined, so a resolver that never answers costs a caller its deadline
// and nothing more), and counts as failed. A failure, of either kind, is kept: every later
// caller gets it at once, without asking the resolver again. Safe from many threads.
class HostResolver {
 public:
  struct Result {
    std::vector<HostAddress> addresses{};
    std::string error{};  // why there are none: "" when there are
  };
  HostResolver(std::string host, int port);
  // The addresses, or the error; waits at most `limit` (named in the error), and not past
  // `deadline`.
  Result resolve(std::chrono::milliseconds limit, std::chrono::steady_clock::time_point deadline);
  bool numeric() const { return numeric_; }

 private:
  struct State;
  std::string host_;
  int port_ = 0;
  bool numeric_ = false;
  std::shared_ptr<State> state_;
};

// The most get() takes of an object of `kind` when the caller names no limit, and what a
// message calls it ("an action entry").
std::uint64_t default_reply_limit(std::string_view kind);
std::string object_description(std::string_view kind);
// "reply of <size> bytes exceeds the <limit>-byte limit for <description>"; size 0: "more than".
std::string over_limit(std::uint64_t size, std::uint64_t limit, std::string_view kind);

// While it lives, SIGPIPE raised by this thread's writes to a socket whose peer went away is
// blocked, and is consumed before the guard unblocks it, so the host's disposition (by default:
// die) never sees it; the write fails with EPIPE instead. The Redis client sends with
// MSG_NOSIGNAL; libcurl and the TLS library might raise it.
class SigpipeBlocked {
 public:
  SigpipeBlocked();
  ~SigpipeBlocked();
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t old_mask_{};
  bool was_pending_ = false;
};

}  // namespace kiln::internal
