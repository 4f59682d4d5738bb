// Keys that travel between checkouts: the base directory a cache keys paths relative to
// (Cache::relocated, Cache::resolved), and the pin line of an entry whose bytes name it
// (internal/cache_pins.h).
#include <algorithm>
#include <cctype>

#include "internal/cache_pins.h"
#include "internal/files.h"
#include "kiln/cache.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

bool is_path_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-' ||
         c == '/' || c == '+' || c == '~';
}

// Whether `text` is an option that a path follows directly ("-I", "-isystem", "-L").
bool is_option(std::string_view text) {
  return text.size() >= 2 && text[0] == '-' &&
         std::all_of(text.begin() + 1, text.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
         });
}

}  // namespace

namespace internal {

// The base directory: absolute and lexically normal, without a trailing slash; "" (no
// relocation) for the root or a name with a newline.
fs::path base_directory_of(const fs::path& given) {
  fs::path base = given;
  if (base.empty()) {
    if (auto dir = env("KILN_BASE_DIR")) {
      base = *dir;
    } else {
      std::error_code ec;
      base = fs::current_path(ec);
    }
  }
  if (base.empty()) return {};
  base = fs::absolute(base).lexically_normal();
  std::string text = base.string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  if (text == "/" || text.find('\n') != std::string::npos) return {};
  return text;
}

// The entry's bytes as stored: its pin line, then the bytes.
std::string pinned_payload(std::string_view bytes, const fs::path& base) {
  std::string pin;
  std::string b = base.string();
  if (!b.empty() && std::string_view(bytes).find(b) != std::string_view::npos) pin = b;
  std::string payload;
  payload.reserve(pin.size() + 1 + bytes.size());
  payload.append(pin).append(1, '\n').append(bytes);
  return payload;
}

// The bytes of a payload pinned to no base or to `base`; std::nullopt otherwise.
std::optional<std::string> unpinned_bytes(std::string payload, const fs::path& base) {
  size_t newline = payload.find('\n');
  if (newline == std::string::npos) return std::nullopt;
  if (newline != 0 && std::string_view(payload).substr(0, newline) != base.string()) {
    return std::nullopt;
  }
  payload.erase(0, newline + 1);
  return payload;
}

}  // namespace internal

std::string Cache::relocated(std::string_view text) const {
  std::string base = base_.string();
  if (base.size() < 2) return std::string(text);
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(base); at != std::string_view::npos; at = text.find(base, at + 1)) {
    if (at < from) continue;
    size_t end = at + base.size();
    bool whole_after = end == text.size() || text[end] == '/' || !is_path_char(text[end]);
    bool whole_before = at == 0 || !is_path_char(text[at - 1]) || is_option(text.substr(0, at));
    if (!whole_after || !whole_before) continue;
    out.append(text.substr(from, at - from)).append("$BASE");
    from = end;
  }
  out.append(text.substr(from));
  return out;
}

fs::path Cache::resolved(std::string_view relocated_path) const {
  if (relocated_path == "$BASE") return base_;
  if (relocated_path.starts_with("$BASE/")) return base_ / relocated_path.substr(6);
  return fs::path(relocated_path);
}

}  // namespace kiln
