// A cache server kiln shares compiled objects through: Redis, or HTTP(S) in the layout ccache,
// sccache and Bazel remote caches use, one backend per URL scheme (remote_backends() lists them).
// kiln runs no server of its own.
//
//   kiln::RemoteStoreOptions options = kiln::RemoteStoreOptions::parse("redis://cache:6379/0");
//   std::unique_ptr<kiln::RemoteStore> store = kiln::open_remote_store(options);
//   store->put("cas", hex, bytes);                      // throws RemoteStoreError on a fault
//   std::optional<std::string> got = store->get("cas", hex);   // std::nullopt: not there
//
// Objects are named by a kind ("ac": action entries, "cas": content) and a lowercase hex name:
// HTTP stores them at <url>/<kind>/<hex> (GET, PUT, HEAD), Redis at the key kiln:<kind>:<hex>
// (GET, SET, EXISTS) in the URL's database. Every operation has a time limit; a server that is
// unreachable, stalls, answers an error or garbage is a RemoteStoreError naming the server (with
// its credentials left out) and what went wrong. The store is safe to call from many threads at
// once: it keeps a connection per concurrent caller and reuses them.
//
// Credentials never come from the URL into messages: redacted_url() is what a message names.
// HTTP takes a bearer token or basic auth, Redis AUTH (a password, or a user and a password for
// an ACL user), from the URL's user info or from the file `credentials_file` names (one line:
// "user:password" or a token; see docs/remote-cache.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/error.h"

namespace kiln {

struct RemoteCacheOptions;  // kiln/cache.h

// A fault of the server or of the way to it (never of the object asked for: a missing object is
// std::nullopt).
class RemoteStoreError : public Error {
 public:
  using Error::Error;
};

struct RemoteStoreOptions {
  // The URL's scheme ("redis+unix"), one of remote_backends()'; set by parse().
  std::string scheme{};
  // The URL as given (it may hold credentials: never print it; print redacted_url(url)).
  std::string url{};
  // redis: host and port (6379 when not given) and database (0); redis+unix: the socket path
  // and database (?db=N); http(s): host, port (80/443) and the path prefix objects go under.
  std::string host{};
  int port = 0;
  std::filesystem::path socket{};
  int database = 0;
  std::string path_prefix{};
  // From the URL's user info, else from credentials_file.
  std::optional<std::string> user{};
  std::optional<std::string> password{};  // Redis AUTH password, HTTP basic password
  std::optional<std::string> token{};     // HTTP bearer token
  std::optional<std::filesystem::path> credentials_file{};
  std::optional<std::filesystem::path> ca_file{};  // HTTPS: the certificates to trust
  // Looking up the host and connecting (within the operation's limit); each operation, whole.
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds operation_timeout{2000};

  // Parses `url` (of a form remote_backends() lists, as "redis://cache:6379/0") by its scheme's
  // backend and reads `credentials_file` when given. Throws InvalidArgument naming what is wrong
  // (the URL redacted) and the forms kiln takes, FileNotFound for a credentials or CA file that
  // is not there.
  static RemoteStoreOptions parse(std::string_view url,
                                  std::optional<std::filesystem::path> credentials_file = {},
                                  std::optional<std::filesystem::path> ca_file = {});
  // What a cache's remote level (kiln/cache.h) opens its store with: options.url parsed with its
  // credentials and CA files, each operation limited to options.operation_timeout, and
  // connecting to a third of that (at most 1 s). Throws as parse().
  static RemoteStoreOptions for_cache(const RemoteCacheOptions& options);
};

// A kind of server kiln can use, by its URL's scheme.
struct RemoteBackendInfo {
  std::string scheme;       // "redis+unix"
  std::string form;         // "redis+unix:///path/to/socket[?db=N]"
  std::string description;  // "Redis on a Unix socket"
};
// Every scheme RemoteStoreOptions::parse takes, in the order messages list them.
std::vector<RemoteBackendInfo> remote_backends();

// `url` with its user info (user and password: a token is often given as the user) and its
// query replaced by "***": "https://***@cache/kiln?***".
std::string redacted_url(std::string_view url);

// What RemoteStore::get takes of an object when the caller names no limit: an action entry
// ("ac") is a line of a hundred bytes, anything else at most what kiln uploads.
inline constexpr std::uint64_t kRemoteActionEntryLimit = std::uint64_t{64} << 10;
inline constexpr std::uint64_t kRemoteObjectLimit = std::uint64_t{64} << 20;

class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  // The object's bytes, or std::nullopt when the server does not have it. A reply larger than
  // `max_bytes` is a RemoteStoreError naming its size and the limit ("reply of 400000000 bytes
  // exceeds the 65536-byte limit for an action entry"), refused as soon as its size is known
  // (from the length it announces, else once more than the limit came): never held whole.
  virtual std::optional<std::string> get(std::string_view kind, std::string_view hex,
                                         std::uint64_t max_bytes) = 0;
  // get() with the limit for `kind`: kRemoteActionEntryLimit for "ac", else kRemoteObjectLimit.
  std::optional<std::string> get(std::string_view kind, std::string_view hex);
  // Stores the object (replacing one of the same name).
  virtual void put(std::string_view kind, std::string_view hex, std::string_view bytes) = 0;
  // Whether the server has the object (HEAD / EXISTS), without fetching it.
  virtual bool contains(std::string_view kind, std::string_view hex) = 0;
  // Removes the object if there (kiln doctor's probe cleans up after itself); a server that
  // does not allow it (HTTP 403/405) is not an error.
  virtual void remove(std::string_view kind, std::string_view hex) = 0;
  // What messages call the server: redacted_url(url).
  virtual const std::string& name() const = 0;
};

// The store for `options` (of the backend of options.scheme). Connects lazily: a server that is
// down is a RemoteStoreError of the first operation, not of this call. Throws RemoteStoreError
// when the HTTP client library (libcurl.so.4, loaded on first use of an http(s) store) is not
// installed, InvalidArgument for a scheme no backend has.
std::unique_ptr<RemoteStore> open_remote_store(const RemoteStoreOptions& options);

}  // namespace kiln
