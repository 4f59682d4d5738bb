// Freshness: what a template service imported, and whether it is unchanged (template_freshness.h).
#include "template_freshness.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "internal/files.h"
#include "internal/sha256.h"

namespace kiln::internal {
namespace {

// A file changed less than this before it was recorded may change again within the same tick
// of the file system's clock: its content is hashed too (as git does for "racily clean" files).
constexpr std::chrono::seconds kRacy{2};

std::int64_t ns_of(const struct timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

std::string digest_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Sha256 hash;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    hash.update(std::string_view(buffer, static_cast<std::size_t>(in.gcount())));
  }
  return hash.hex_digest();
}

// The files mapped into this process (its shared libraries) and its executable.
std::vector<std::string> loaded_files() {
  std::set<std::string> paths;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::size_t slash = line.find('/');
    if (slash == std::string::npos || line.ends_with(" (deleted)")) continue;
    paths.insert(line.substr(slash));
  }
  std::error_code ec;
  std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (!exe.empty()) paths.insert(exe);
  return {paths.begin(), paths.end()};
}

bool matches(std::string_view name, const std::vector<std::string>& stems) {
  std::string_view stem = name.substr(0, name.find('.'));
  return std::any_of(stems.begin(), stems.end(), [&](const std::string& wanted) {
    return wanted == "*.pth" ? name.ends_with(".pth") : stem == wanted;
  });
}

// The names in `path` that match `stems`, sorted, one a line ("" for a directory that is not
// there: one made later is a change).
std::string entries_of(const std::string& path, const std::vector<std::string>& stems) {
  std::vector<std::string> names;
  if (DIR* dir = ::opendir(path.c_str())) {
    while (const dirent* entry = ::readdir(dir)) {
      std::string_view name = entry->d_name;
      if (name != "." && name != ".." && matches(name, stems)) names.emplace_back(name);
    }
    ::closedir(dir);
  }
  std::sort(names.begin(), names.end());
  std::string text;
  for (const std::string& name : names) text += name + '\n';
  return text;
}

}  // namespace

Freshness Freshness::record(const std::vector<std::string>& sources) {
  Freshness fresh;
  std::set<std::string> seen;
  std::vector<std::string> paths = loaded_files();
  for (const std::string& source : sources) {
    if (source.starts_with('f')) {
      paths.push_back(source.substr(1));
    } else if (source.starts_with('d')) {
      std::vector<std::string> fields;
      std::string_view rest = std::string_view(source).substr(1);
      for (std::size_t tab; (tab = rest.find('\t')) != std::string_view::npos;
           rest.remove_prefix(tab + 1)) {
        fields.emplace_back(rest.substr(0, tab));
      }
      fields.emplace_back(rest);
      Directory dir{fields[0], {fields.begin() + 1, fields.end()}, {}};
      dir.entries = entries_of(dir.path, dir.stems);
      fresh.directories_.push_back(std::move(dir));
    }
  }
  auto racy_before = std::chrono::system_clock::now() - kRacy;
  std::int64_t racy_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(racy_before.time_since_epoch()).count();
  for (const std::string& path : paths) {
    struct stat st {};
    if (!seen.insert(path).second || ::stat(path.c_str(), &st) != 0) continue;
    File file{path, st.st_dev, st.st_ino, st.st_size, ns_of(st.st_mtim), ns_of(st.st_ctim), {}};
    if (file.mtime_ns >= racy_ns || file.ctime_ns >= racy_ns) file.digest = digest_of(path);
    fresh.files_.push_back(std::move(file));
  }
  return fresh;
}

std::string Freshness::stale_reason() const {
  for (const File& file : files_) {
    struct stat st {};
    if (::stat(file.path.c_str(), &st) != 0) return fmt::format("{} is gone", file.path);
    bool same = st.st_dev == file.dev && st.st_ino == file.ino && st.st_size == file.size &&
                ns_of(st.st_mtim) == file.mtime_ns && ns_of(st.st_ctim) == file.ctime_ns;
    if (!same || (!file.digest.empty() && digest_of(file.path) != file.digest)) {
      return fmt::format("{} changed", file.path);
    }
  }
  for (const Directory& dir : directories_) {
    if (entries_of(dir.path, dir.stems) != dir.entries) {
      return fmt::format("{} has other entries that imports would find", dir.path);
    }
  }
  return {};
}

}  // namespace kiln::internal
