// What the backends' stores share (internal/store_support.h), less the host resolver
// (host_resolver.cc).
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "internal/fd.h"
#include "internal/store_support.h"

namespace kiln {
namespace internal {

std::uint64_t default_reply_limit(std::string_view kind) {
  return kind == "ac" ? kRemoteActionEntryLimit : kRemoteObjectLimit;
}

std::string object_description(std::string_view kind) {
  if (kind == "ac") return "an action entry";
  if (kind == "cas") return "a content object";
  return fmt::format("a '{}' object", kind);
}

std::string over_limit(std::uint64_t size, std::uint64_t limit, std::string_view kind) {
  std::string what = size == 0 ? "reply of more than" : fmt::format("reply of {}", size);
  return fmt::format("{} bytes exceeds the {}-byte limit for {}", what, limit,
                     object_description(kind));
}

void check_object_name(std::string_view store, std::string_view kind, std::string_view hex) {
  auto kind_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  };
  auto hex_char = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (kind.empty() || kind.size() > 32 || !std::all_of(kind.begin(), kind.end(), kind_char)) {
    throw InvalidArgument(fmt::format(
        "{}: the object kind '{}' is not 1 to 32 of a-z, 0-9, '_' and '-'", store, kind));
  }
  if (hex.empty() || hex.size() > 128 || !std::all_of(hex.begin(), hex.end(), hex_char)) {
    throw InvalidArgument(
        fmt::format("{}: the object name '{}' is not 1 to 128 lowercase hex digits", store, hex));
  }
}

SigpipeBlocked::SigpipeBlocked() {
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask_);
}

SigpipeBlocked::~SigpipeBlocked() {
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
    const timespec zero{0, 0};
    int saved_errno = errno;
    retry_eintr([&] { return ::sigtimedwait(&pipe_only, nullptr, &zero); });
    errno = saved_errno;
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace internal
}  // namespace kiln
