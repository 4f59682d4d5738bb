#include "kiln/remote_store.h"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>

#include <fmt/format.h>

#include "internal/fd.h"
#include "internal/remote_backends.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using Scheme = RemoteStoreOptions::Scheme;

constexpr std::string_view kForms =
    "redis://[user:password@]host[:port][/db], redis+unix:///path/to/socket[?db=N], "
    "http(s)://[user:password@]host[:port][/prefix]";

// A URL cut into its parts, none decoded yet. The user info ends at the URL's last '@', so that
// a password may hold '/', '?' or '#' without escapes (an '@' in a path must be written %40).
struct UrlParts {
  std::string_view scheme;
  std::optional<std::string_view> userinfo;
  std::string_view authority;  // host[:port]
  std::string_view path;
  std::optional<std::string_view> query;
  bool fragment = false;
};

std::optional<UrlParts> split_url(std::string_view url) {
  size_t colon = url.find("://");
  if (colon == std::string_view::npos) return std::nullopt;
  UrlParts parts;
  parts.scheme = url.substr(0, colon);
  std::string_view rest = url.substr(colon + 3);
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) {
    parts.userinfo = rest.substr(0, at);
    rest.remove_prefix(at + 1);
  }
  size_t end = std::min(rest.find_first_of("/?#"), rest.size());
  parts.authority = rest.substr(0, end);
  rest.remove_prefix(end);
  if (size_t hash = rest.find('#'); hash != std::string_view::npos) {
    parts.fragment = true;
    rest = rest.substr(0, hash);
  }
  if (size_t question = rest.find('?'); question != std::string_view::npos) {
    parts.query = rest.substr(question + 1);
    rest = rest.substr(0, question);
  }
  parts.path = rest;
  return parts;
}

bool is_http(std::string_view scheme) { return scheme == "http" || scheme == "https"; }

[[noreturn]] void bad_url(std::string_view url, std::string_view problem) {
  throw InvalidArgument(
      fmt::format("remote cache URL {}: {} (the forms: {})", redacted_url(url), problem, kForms));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `text` with its %XX escapes decoded; std::nullopt when one is malformed.
std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    int high = hex_value(text[i + 1]);
    int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

// A decimal number from `min` to `max`, all of `text`.
std::optional<int> number(std::string_view text, int min, int max) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    return std::nullopt;
  }
  return value;
}

// host[:port], or [IPv6 address][:port].
void parse_authority(std::string_view url, std::string_view authority, int default_port,
                     RemoteStoreOptions& out) {
  std::string_view host = authority;
  std::optional<std::string_view> port;
  if (authority.starts_with('[')) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) bad_url(url, "an IPv6 address without its ']'");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) bad_url(url, "something after the ']'");
    if (!after.empty()) port = after.substr(1);
  } else if (size_t colon = authority.find(':'); colon != std::string_view::npos) {
    if (authority.find(':', colon + 1) != std::string_view::npos) {
      bad_url(url, "an IPv6 address must be in brackets ([::1]:6379)");
    }
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) bad_url(url, "no host");
  out.host = std::string(host);
  out.port = default_port;
  if (port) {
    std::optional<int> value = number(*port, 1, 65535);
    if (!value) bad_url(url, fmt::format("the port '{}' is not a number from 1 to 65535", *port));
    out.port = *value;
  }
}

// Redis: a user info without ':' is the password (ccache's redis://PASSWORD@host); an empty
// user (":password") is none. HTTP: without ':' it is the user name.
void parse_userinfo(std::string_view url, std::string_view userinfo, bool http,
                    RemoteStoreOptions& out) {
  size_t colon = userinfo.find(':');
  std::optional<std::string> user = percent_decoded(userinfo.substr(0, colon));
  std::optional<std::string> password;
  if (colon != std::string_view::npos) password = percent_decoded(userinfo.substr(colon + 1));
  if (!user || (colon != std::string_view::npos && !password)) {
    bad_url(url, "a malformed %-escape in the user info");
  }
  if (colon == std::string_view::npos && !http) std::swap(user, password);
  if (user && !user->empty()) out.user = std::move(*user);
  if (password && !password->empty()) out.password = std::move(*password);
}

void parse_redis_database(std::string_view url, const UrlParts& parts, RemoteStoreOptions& out) {
  if (parts.scheme == "redis") {
    if (parts.query) bad_url(url, "a query ('?...') is not understood in a redis:// URL");
    std::string_view db = parts.path.starts_with('/') ? parts.path.substr(1) : parts.path;
    if (db.empty()) return;
    std::optional<int> value = number(db, 0, 1 << 20);
    if (!value) bad_url(url, fmt::format("the database '{}' is not a number", db));
    out.database = *value;
    return;
  }
  if (!parts.query) return;
  if (!parts.query->starts_with("db=")) {
    bad_url(url, "the only query a redis+unix:// URL takes is ?db=N");
  }
  std::optional<int> value = number(parts.query->substr(3), 0, 1 << 20);
  if (!value) bad_url(url, "the database (?db=N) is not a number");
  out.database = *value;
}

void parse_redis(std::string_view url, const UrlParts& parts, RemoteStoreOptions& out) {
  if (parts.scheme == "redis") {
    out.scheme = Scheme::redis;
    parse_authority(url, parts.authority, 6379, out);
  } else {
    out.scheme = Scheme::redis_unix;
    if (!parts.authority.empty()) {
      bad_url(url, "a redis+unix:// URL names no host: redis+unix:///path/to/socket");
    }
    std::optional<std::string> path = percent_decoded(parts.path);
    if (!path || path->size() < 2) bad_url(url, "no socket path (redis+unix:///path/to/socket)");
    out.socket = *path;
  }
  parse_redis_database(url, parts, out);
}

void parse_http(std::string_view url, const UrlParts& parts, RemoteStoreOptions& out) {
  bool https = parts.scheme == "https";
  out.scheme = https ? Scheme::https : Scheme::http;
  parse_authority(url, parts.authority, https ? 443 : 80, out);
  if (parts.query) bad_url(url, "a query ('?...') is not understood in an HTTP cache's URL");
  std::string_view prefix = parts.path;
  while (prefix.ends_with('/')) prefix.remove_suffix(1);
  out.path_prefix = std::string(prefix);
}

// The first line of the credentials file: "user:password", or a secret alone (an HTTP bearer
// token; a Redis password). Used only where the URL holds no password (nor, for the user part,
// a user).
void read_credentials(const fs::path& file, bool http, RemoteStoreOptions& out) {
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    throw FileNotFound(
        fmt::format("remote cache credentials file {} does not exist", file.string()));
  }
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) {
    throw InvalidArgument(
        fmt::format("remote cache credentials file {} could not be read or is "
                    "empty (one line: user:password, or a token)",
                    file.string()));
  }
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
    line.pop_back();
  }
  if (line.empty()) {
    throw InvalidArgument(fmt::format(
        "remote cache credentials file {}: its first line is empty (user:password, or a token)",
        file.string()));
  }
  if (out.password || out.token) return;
  if (size_t colon = line.find(':'); colon != std::string::npos) {
    if (!out.user && colon > 0) out.user = line.substr(0, colon);
    out.password = line.substr(colon + 1);
  } else if (http && !out.user) {
    out.token = line;
  } else {
    out.password = line;
  }
}

}  // namespace

RemoteStoreOptions RemoteStoreOptions::parse(std::string_view url,
                                             std::optional<fs::path> credentials_file,
                                             std::optional<fs::path> ca_file) {
  if (url.empty()) bad_url(url, "it is empty");
  if (std::any_of(url.begin(), url.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == 0x7f; })) {
    bad_url(url, "it holds a space or a control character");
  }
  std::optional<UrlParts> parts = split_url(url);
  if (!parts) bad_url(url, "no scheme (redis://, redis+unix://, http://, https://)");
  if (parts->fragment) bad_url(url, "a fragment ('#...') is not understood");
  RemoteStoreOptions out;
  out.url = std::string(url);
  bool http = is_http(parts->scheme);
  if (http) {
    parse_http(url, *parts, out);
  } else if (parts->scheme == "redis" || parts->scheme == "redis+unix") {
    parse_redis(url, *parts, out);
  } else if (parts->scheme == "rediss") {
    bad_url(url, "Redis over TLS (rediss://) is not supported");
  } else {
    bad_url(url, fmt::format("the scheme '{}' is not one kiln knows", parts->scheme));
  }
  if (parts->userinfo) parse_userinfo(url, *parts->userinfo, http, out);
  if (credentials_file) {
    read_credentials(*credentials_file, http, out);
    out.credentials_file = std::move(credentials_file);
  }
  if (ca_file) {
    std::error_code ec;
    if (!fs::exists(*ca_file, ec)) {
      throw FileNotFound(fmt::format("remote cache CA file {} does not exist", ca_file->string()));
    }
    out.ca_file = std::move(ca_file);
  }
  return out;
}

std::string redacted_url(std::string_view url) {
  size_t colon = url.find("://");
  size_t start = colon == std::string_view::npos ? 0 : colon + 3;
  std::string out(url.substr(0, start));
  // As split_url: the user info ends at the last '@' (a password may hold '/', '?' or '#').
  if (size_t at = url.rfind('@'); at != std::string_view::npos && at >= start) {
    out += "***";  // user and password alike: a token is often given as the user
    start = at;
  }
  std::string_view rest = url.substr(start);
  size_t query = rest.find_first_of("?#");
  out += rest.substr(0, query);
  if (query != std::string_view::npos) {
    out += rest[query];
    out += "***";
  }
  return out;
}

std::optional<std::string> RemoteStore::get(std::string_view kind, std::string_view hex) {
  return get(kind, hex, internal::default_reply_limit(kind));
}

std::unique_ptr<RemoteStore> open_remote_store(const RemoteStoreOptions& options) {
  switch (options.scheme) {
    case Scheme::redis:
    case Scheme::redis_unix:
      return internal::open_redis_store(options);
    case Scheme::http:
    case Scheme::https:
      return internal::open_http_store(options);
  }
  throw InvalidArgument("open_remote_store: an unknown scheme");
}

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
