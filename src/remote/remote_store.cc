// kiln/remote_store.h's front: a URL read up to its scheme, then by its backend's row of the
// registry (internal/backend_registry.h); the user info and the files alike for every backend.
#include "kiln/remote_store.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "internal/backend_registry.h"
#include "internal/store_support.h"
#include "kiln/cache.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using internal::bad_url;
using internal::LoneSecret;
using internal::RemoteBackend;

// Without ':' the user info is the password where a lone secret is one (Redis: ccache's
// redis://PASSWORD@host), else the user name (HTTP); an empty user (":password") is none.
void parse_userinfo(std::string_view url, std::string_view userinfo, LoneSecret lone,
                    RemoteStoreOptions& out) {
  size_t colon = userinfo.find(':');
  std::optional<std::string> user = internal::percent_decoded(userinfo.substr(0, colon));
  std::optional<std::string> password;
  if (colon != std::string_view::npos) {
    password = internal::percent_decoded(userinfo.substr(colon + 1));
  }
  if (!user || (colon != std::string_view::npos && !password)) {
    bad_url(url, "a malformed %-escape in the user info");
  }
  if (colon == std::string_view::npos && lone == LoneSecret::password) std::swap(user, password);
  if (user && !user->empty()) out.user = std::move(*user);
  if (password && !password->empty()) out.password = std::move(*password);
}

// The first line of the credentials file: "user:password", or a secret alone (an HTTP bearer
// token; a Redis password). Used only where the URL holds no password (nor, for the user part,
// a user).
void read_credentials(const fs::path& file, LoneSecret lone, RemoteStoreOptions& out) {
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
  } else if (lone == LoneSecret::user_or_token && !out.user) {
    out.token = line;
  } else {
    out.password = line;
  }
}

// The row that reads `parts`' scheme; throws InvalidArgument when there is none, or when it is
// a refusal.
const RemoteBackend& backend_of(std::string_view url, const internal::UrlParts& parts) {
  const RemoteBackend* backend = internal::find_remote_backend(parts.scheme);
  if (backend == nullptr) {
    bad_url(url, fmt::format("the scheme '{}' is not one kiln knows (it knows {})", parts.scheme,
                             internal::remote_schemes_text()));
  }
  if (!backend->refusal.empty()) bad_url(url, backend->refusal);
  return *backend;
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
  std::optional<internal::UrlParts> parts = internal::split_url(url);
  if (!parts) bad_url(url, fmt::format("no scheme ({})", internal::remote_schemes_text()));
  if (parts->fragment) bad_url(url, "a fragment ('#...') is not understood");
  const RemoteBackend& backend = backend_of(url, *parts);
  RemoteStoreOptions out;
  out.url = std::string(url);
  out.scheme = std::string(backend.scheme);
  backend.parse(url, *parts, out);
  if (parts->userinfo) parse_userinfo(url, *parts->userinfo, backend.lone_secret, out);
  if (credentials_file) {
    read_credentials(*credentials_file, backend.lone_secret, out);
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

RemoteStoreOptions RemoteStoreOptions::for_cache(const RemoteCacheOptions& options) {
  RemoteStoreOptions store =
      RemoteStoreOptions::parse(options.url, options.credentials_file, options.ca_file);
  store.operation_timeout = options.operation_timeout;
  store.connect_timeout = std::min(std::chrono::milliseconds(1000), options.operation_timeout / 3);
  return store;
}

std::vector<RemoteBackendInfo> remote_backends() {
  std::vector<RemoteBackendInfo> all;
  for (const RemoteBackend* row : internal::usable_remote_backends()) {
    all.push_back({.scheme = std::string(row->scheme),
                   .form = std::string(row->form),
                   .description = std::string(row->description)});
  }
  return all;
}

std::unique_ptr<RemoteStore> open_remote_store(const RemoteStoreOptions& options) {
  const RemoteBackend* backend = internal::find_remote_backend(options.scheme);
  if (backend == nullptr || backend->open == nullptr) {
    throw InvalidArgument(fmt::format("open_remote_store: no backend has the scheme '{}' (of {})",
                                      options.scheme, redacted_url(options.url)));
  }
  return backend->open(options);
}

}  // namespace kiln
