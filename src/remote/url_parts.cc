// The pieces of reading a remote cache URL that every backend's parse uses
// (internal/backend_registry.h).
#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "internal/backend_registry.h"

namespace kiln::internal {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

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

void bad_url(std::string_view url, std::string_view problem) {
  throw InvalidArgument(fmt::format("remote cache URL {}: {} (the forms: {})", redacted_url(url),
                                    problem, remote_forms_text()));
}

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

std::optional<int> number_in(std::string_view text, int min, int max) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    return std::nullopt;
  }
  return value;
}

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
    std::optional<int> value = number_in(*port, 1, 65535);
    if (!value) bad_url(url, fmt::format("the port '{}' is not a number from 1 to 65535", *port));
    out.port = *value;
  }
}

}  // namespace kiln::internal
