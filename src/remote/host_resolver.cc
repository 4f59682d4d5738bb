// HostResolver (internal/store_support.h): a cache host's name looked up once, with a limit,
// on a thread that is left behind, never joined, when the resolver does not answer in time.
#include <netdb.h>
#include <netinet/in.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "internal/store_support.h"

namespace kiln::internal {
namespace {

struct FreeAddresses {
  void operator()(addrinfo* list) const { ::freeaddrinfo(list); }
};

// getaddrinfo for a TCP connection to host:port; the addresses, or the resolver's words.
HostResolver::Result look_up(const std::string& host, int port, int flags) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags;
  addrinfo* raw = nullptr;
  std::string service = std::to_string(port);
  int code = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &raw);
  std::unique_ptr<addrinfo, FreeAddresses> list(raw);
  HostResolver::Result result;
  if (code != 0) {
    result.error = code == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(code);
    return result;
  }
  for (const addrinfo* entry = list.get(); entry != nullptr; entry = entry->ai_next) {
    if (entry->ai_addrlen > sizeof(sockaddr_storage)) continue;
    HostAddress address;
    std::memcpy(&address.address, entry->ai_addr, entry->ai_addrlen);
    address.length = entry->ai_addrlen;
    char text[NI_MAXHOST] = "";
    if (::getnameinfo(entry->ai_addr, entry->ai_addrlen, text, sizeof text, nullptr, 0,
                      NI_NUMERICHOST) != 0) {
      continue;
    }
    address.text = entry->ai_family == AF_INET6 ? fmt::format("[{}]", text) : std::string(text);
    result.addresses.push_back(std::move(address));
  }
  if (result.addresses.empty()) result.error = "no address for a TCP connection";
  return result;
}

}  // namespace

struct HostResolver::State {
  std::mutex mutex;
  std::condition_variable finished;
  bool started = false;
  bool done = false;
  Result result;
};

HostResolver::HostResolver(std::string host, int port)
    : host_(std::move(host)), port_(port), state_(std::make_shared<State>()) {
  Result numeric = look_up(host_, port_, AI_NUMERICHOST);
  if (numeric.error.empty()) {
    numeric_ = true;
    state_->started = state_->done = true;
    state_->result = std::move(numeric);
  }
}

HostResolver::Result HostResolver::resolve(std::chrono::milliseconds limit,
                                           std::chrono::steady_clock::time_point deadline) {
  deadline = std::min(deadline, std::chrono::steady_clock::now() + limit);
  std::unique_lock lock(state_->mutex);
  if (!state_->started) {
    state_->started = true;
    try {
      // The thread owns what it uses (the state, a copy of the name): it may outlive the store.
      std::thread([state = state_, host = host_, port = port_] {
        Result found = look_up(host, port, AI_ADDRCONFIG);
        std::lock_guard done_lock(state->mutex);
        if (state->done) return;  // given up on meanwhile
        state->done = true;
        state->result = std::move(found);
        state->finished.notify_all();
      }).detach();
    } catch (const std::system_error& e) {
      state_->done = true;
      state_->result.error = fmt::format("no thread for the lookup: {}", e.what());
    }
  }
  if (!state_->finished.wait_until(lock, deadline, [&] { return state_->done; })) {
    state_->done = true;
    state_->result.error = fmt::format(
        "the resolver did not answer within {} ms (kiln does not ask it again)", limit.count());
    state_->finished.notify_all();
  }
  if (!state_->result.error.empty()) {
    return {.error = fmt::format("resolving {}: {}", host_, state_->result.error)};
  }
  return state_->result;
}

}  // namespace kiln::internal
