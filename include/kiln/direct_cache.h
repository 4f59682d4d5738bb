// Caching a compile whose headers are known only to the compiler ("direct mode", as ccache has
// it). The key of what the caller knows (the command, the tools, the sources' content) names one
// entry: the headers the compiler reported, from its own dependency output, the last time it
// ran, each with a hash of its content, then the result. A lookup re-hashes those headers and
// serves the result only when every one still matches.
//
//   kiln::DirectCache direct(cache, base_key, {source});   // base_key covers the source's content
//   if (auto bytes = direct.get()) return *bytes;
//   compile(..., "-MD", "-MF", depfile);
//   direct.put(kiln::parse_depfile(read(depfile), cwd), bytes);  // stored unless inputs moved
//
// Nothing is stored when a source's content differs after the compile from what it was when the
// key was made, or when a header the compiler read was modified once the compile had started:
// the compiler may have read other bytes than those the key would claim.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/cache.h"

namespace kiln {

// The prerequisites of every rule in a make-syntax dependency file (what gcc, clang and nvcc
// write for -MD -MF): backslash-newline continues a line, "\ " is a space in a name, "$$" a
// dollar. Relative paths are made absolute against `cwd` (the compiler's working directory).
// Each path appears once, in first-seen order.
std::vector<std::filesystem::path> parse_depfile(std::string_view text,
                                                 const std::filesystem::path& cwd);

// A file's content as DirectCache hashes it.
std::string content_key(std::string_view content);

// What a key holds of a tool or library file: "content:<content_key of its bytes>", the same on
// every machine that has the same file wherever it lies. Remembered while the file's inode, size
// and times stay the same: by this process, and in `memo`'s directory when given (a compiler
// library of 100 MB is then hashed once per machine, not once per process). "" for a file that
// cannot be read.
std::string file_content_identity(const std::filesystem::path& path, const Cache* memo = nullptr);

class DirectCache {
 public:
  // `base_key`: the cache key of everything but the headers; `sources`: the files whose content
  // it covers (re-read after the compile). Hashes the sources now: call it before compiling.
  DirectCache(const Cache& cache, std::string base_key,
              const std::vector<std::filesystem::path>& sources);
  // The same for a caller that read the sources itself before the compile: each with
  // content_key() of what it read. The sources are then read once more, by put().
  DirectCache(const Cache& cache, std::string base_key,
              const std::vector<std::pair<std::filesystem::path, std::string>>& hashed_sources);

  // The stored result when the manifest's headers all still have their recorded content (a
  // header under the cache's base directory is recorded relative to it). `origin`: the level
  // that held the entry (none on a miss).
  std::optional<std::string> get(CacheOrigin* origin = nullptr) const;

  // Records `headers` (the compiler's dependency output; the sources, and files under the
  // `ignored` directories, are left out) with their content hashes, and `bytes` as the result.
  // Returns false, storing nothing, when a source or header changed during the compile or a
  // header cannot be read.
  bool put(const std::vector<std::filesystem::path>& headers, std::string_view bytes,
           const std::vector<std::filesystem::path>& ignored = {}) const;

 private:
  std::string manifest_key() const;

  const Cache& cache_;
  std::string base_key_;
  std::vector<std::filesystem::path> sources_;
  std::vector<std::string> source_hashes_;
  // When the compile started, on the clock the kernel stamps files with.
  std::chrono::nanoseconds started_{};
};

}  // namespace kiln
