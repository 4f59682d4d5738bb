// The registry of remote backends: a URL scheme -> how its URLs are read, how its store is opened,
// and a line saying what it is. RemoteStoreOptions::parse and open_remote_store (remote_store.cc)
// dispatch through it and nothing else knows a scheme: messages, `kiln build --help` and
// remote_backends() (kiln/remote_store.h) list its rows.
//
// The built-in rows are one table, src/remote/backends.cc, each row defined in its backend's file
// (redis_store.cc, http_store.cc). A backend is added with a file of its own that defines its row
// (a RemoteBackend) and that one row in the table (and the file in src/CMakeLists.txt), or, for a
// backend outside the table (a test's fake one), with a RemoteBackendRegistration of its row:
//
//   const kiln::internal::RemoteBackend kMemBackend{
//       .scheme = "mem", .form = "mem://name", .description = "a map in this process",
//       .parse = &parse_mem, .open = &open_mem};
//   kiln::internal::RemoteBackendRegistration registered(kMemBackend);  // until it is destroyed
//   auto options = kiln::RemoteStoreOptions::parse("mem://shelf");       // parse_mem's
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/remote_store.h"

namespace kiln::internal {

// A URL cut into its parts, none decoded yet (split_url).
struct UrlParts {
  std::string_view scheme;
  std::optional<std::string_view> userinfo;
  std::string_view authority;  // host[:port]
  std::string_view path;
  std::optional<std::string_view> query;
  bool fragment = false;
};

// How a secret given alone (a URL's user info without ':', a credentials file's line without
// ':') is read.
enum class LoneSecret {
  password,       // Redis: ccache's redis://PASSWORD@host, AUTH <password>
  user_or_token,  // HTTP: in the URL the user's name, in the credentials file a bearer token
};

// One row of the registry. A row with a `refusal` names a scheme kiln knows only to refuse it
// (its parse and open are null); messages do not list it.
struct RemoteBackend {
  std::string_view scheme;       // "redis+unix": URLs that begin "redis+unix://"
  std::string_view form;         // "redis+unix:///path/to/socket[?db=N]", for messages and docs
  std::string_view description;  // one line: "Redis on a Unix socket"
  LoneSecret lone_secret = LoneSecret::password;
  // Sets what is the scheme's own in `out` (host, port, socket, database, path_prefix) from
  // `parts`; out.url and out.scheme are set already, the user info and the files are read after
  // it. Throws InvalidArgument through bad_url.
  void (*parse)(std::string_view url, const UrlParts& parts, RemoteStoreOptions& out) = nullptr;
  // The store of parsed options. Connects lazily; throws RemoteStoreError when the store cannot
  // be had at all (a client library that is not installed).
  std::unique_ptr<RemoteStore> (*open)(const RemoteStoreOptions& options) = nullptr;
  std::string_view refusal{};  // "Redis over TLS (rediss://) is not supported"
};

// The row for `scheme` (refusals included), or null. Safe from many threads, as is all of the
// registry.
const RemoteBackend* find_remote_backend(std::string_view scheme);
// Every row that is not a refusal, built-in first, in the table's order, then added ones.
std::vector<const RemoteBackend*> usable_remote_backends();
// "redis://, redis+unix://, http://, https://": the usable schemes, for messages.
std::string remote_schemes_text();
// The usable rows' forms, each once ("http(s)://..." serves two rows), joined by ", ".
std::string remote_forms_text();

// Adds `backend` to the registry while it lives; `backend` must outlive it. Throws
// InvalidArgument when its scheme is one the registry has already.
class RemoteBackendRegistration {
 public:
  explicit RemoteBackendRegistration(const RemoteBackend& backend);
  ~RemoteBackendRegistration();
  RemoteBackendRegistration(const RemoteBackendRegistration&) = delete;
  RemoteBackendRegistration& operator=(const RemoteBackendRegistration&) = delete;

 private:
  const RemoteBackend* backend_;
};

// --- What backends' parse functions share (url_parts.cc) ---

// `url` cut at its "://", its last '@' before the path (so that a password may hold '/', '?'
// or '#' unescaped), its path, query and fragment; std::nullopt without a "://".
std::optional<UrlParts> split_url(std::string_view url);
// Throws InvalidArgument: "remote cache URL <redacted url>: <problem> (the forms: ...)".
[[noreturn]] void bad_url(std::string_view url, std::string_view problem);
// `text` with its %XX escapes decoded; std::nullopt when one is malformed.
std::optional<std::string> percent_decoded(std::string_view text);
// A decimal number from `min` to `max`, all of `text`.
std::optional<int> number_in(std::string_view text, int min, int max);
// host[:port] or [IPv6 address][:port] into out.host and out.port (`default_port` when none).
void parse_authority(std::string_view url, std::string_view authority, int default_port,
                     RemoteStoreOptions& out);

}  // namespace kiln::internal
