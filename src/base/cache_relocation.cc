// Keys that travel between checkouts: the base directory a cache keys paths relative to
// (Cache::relocated, Cache::resolved), and the pin line of an entry whose bytes name it
// (internal/cache_pins.h).
#include <algorithm>
#include <cctype>

#include "internal/cache_pins.h"
#include "internal/files.h"
#include "kiln/cache.h"
#include "kiln/settings.h"

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
    if (auto dir = settings::text("KILN_BASE_DIR")) {
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

namespace {

// Whether `base` starts at `at` in `text` as a whole path (Cache::relocated's rule).
bool whole_path_at(std::string_view text, size_t at, std::string_view base) {
  if (text.substr(at, base.size()) != base) return false;
  size_t end = at + base.size();
  bool whole_after = end == text.size() || text[end] == '/' || !is_path_char(text[end]);
  bool whole_before = at == 0 || !is_path_char(text[at - 1]) || is_option(text.substr(0, at));
  return whole_after && whole_before;
}

}  // namespace

std::string relocated_text(std::string_view text, const fs::path& base_path,
                           std::initializer_list<NamedDirectory> dirs) {
  std::string base = base_path.string();
  if (base.size() < 2) base.clear();
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const NamedDirectory* named = std::find_if(dirs.begin(), dirs.end(), [&](const auto& d) {
      return !d.path.empty() && text.substr(at, d.path.size()) == d.path;
    });
    if (named != dirs.end()) {
      out.append(named->name);
      at += named->path.size();
    } else if (!base.empty() && whole_path_at(text, at, base)) {
      out.append("$BASE");
      at += base.size();
    } else {
      if (text[at] == '$') out.push_back('$');
      out.push_back(text[at++]);
    }
  }
  return out;
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
  return internal::relocated_text(text, base_);
}

fs::path Cache::resolved(std::string_view relocated_path) const {
  std::string path;
  std::string_view rest = relocated_path;
  if (rest == "$BASE" || rest.starts_with("$BASE/")) {
    path = base_.string();
    rest.remove_prefix(5);
  }
  // relocated() doubled every '$' of the path itself.
  for (size_t i = 0; i < rest.size(); ++i) {
    path += rest[i];
    if (rest[i] == '$' && i + 1 < rest.size() && rest[i + 1] == '$') ++i;
  }
  return path;
}

}  // namespace kiln
