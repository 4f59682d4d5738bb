// The compile server's precompiled headers (nvrtc_server.h): which headers may go into one,
// which one a compile may use, how one is made, and which are kept.
//
// A PCH stands for a kernel source's header prefix (nvrtc_source.h), which holds only headers
// that NVRTC's search finds in the toolkit's own include directories (IncludeSearch): a user's
// header named cuda/x.h, found through -I, stays in the kernel and is read by every compile.
// A PCH is keyed by the prefix's text, every option, and the working directory when an include
// directory is relative; and it is used only while each file outside the toolkit that the prefix
// may read (each #include, #include_next and __has_include of it and of the headers these reach,
// whatever the #if around them) has the content it had when the PCH was made, and each place
// outside the toolkit where such a header was looked for in vain is still empty. The toolkit's
// own files are keyed by its identity (the server's id covers NVRTC), as the kernel cache keys
// them.
//
//   PchSpec spec = pch_spec(source, prefix, options, toolkit_dirs);
//   std::optional<OpenPch> pch = open_pch(private_dir, spec);   // none made yet, or out of date
//   NvrtcAttempt attempt = attempt_with_pch(source, name, options, cubin, pch);
//   if (!spec.key.empty() && !pch) make_pch(private_dir, spec);  // for the compiles to come
//
// Files, in the server's private directory: <key>.files (the manifest: the files and the empty
// places, and the name of its PCH), <key>-<digest of the manifest>.pch. At most kMaxPchFiles,
// and at most a quarter of the kernel cache's size, stay; the least recently used go first (a
// use sets the file's modification time). Any of them may vanish at any moment (`kiln cache
// clear`, the cache's eviction in another process): a compile that opened its PCH reads it
// through the descriptor, one that did not compiles without one.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends.h"
#include "internal/fd.h"

namespace kiln::cuda::internal {

inline constexpr size_t kMaxPchFiles = 16;
// The CPU priority (nice(2)) a compile server's child makes a PCH at, after answering, its I/O
// priority the idle class: it yields to the compiles running meanwhile (the other parts of the
// same module, nvrtc_parallel.h). The server has a session, so an autogroup (sched(7)), of its
// own: the maker yields to the server's other children, not to every process on the machine.
inline constexpr int kPchNice = 19;

// Where NVRTC finds a header: for a "..." include beside the including file first, then in each
// include directory of the options (-I<dir>, -I <dir>, --include-path[=]<dir>) in their order;
// a relative one is found from the working directory.
class IncludeSearch {
 public:
  // `toolkit_dirs`: the toolkit's include directories (include_options()).
  IncludeSearch(const std::vector<std::string>& options,
                const std::vector<std::filesystem::path>& toolkit_dirs);

  // The file NVRTC opens for `header` (as written between <> or ""), or std::nullopt.
  std::optional<std::filesystem::path> find(std::string_view header,
                                            const std::filesystem::path& beside = {}) const;
  // Whether `header` (as written between <>) is one of the toolkit's: found first in one of its
  // directories.
  bool from_toolkit(std::string_view header) const;
  bool in_toolkit(const std::filesystem::path& file) const;
  // Whether an include directory is relative (the working directory decides what it holds).
  bool relative() const noexcept { return relative_; }
  const std::vector<std::filesystem::path>& dirs() const noexcept { return dirs_; }

 private:
  std::vector<std::filesystem::path> dirs_;  // absolute, in the options' order
  std::vector<std::filesystem::path> toolkit_;
  bool relative_ = false;
};

// What the files outside the toolkit that a header prefix may read are now.
struct PchInputs {
  std::vector<std::pair<std::filesystem::path, std::string>> files;  // each with its content's
                                                                     // digest
  std::vector<std::filesystem::path> absent;  // where a header was looked for in vain
};
// Follows every #include, #include_next and __has_include (and spellings ending in has_include,
// such as CCCL's _CCCL_HAS_INCLUDE) from `prefix`; std::nullopt when a file cannot be read.
std::optional<PchInputs> pch_inputs(std::string_view prefix, const IncludeSearch& search);
// Whether every file of `inputs` still has its digest and every absent place is still empty.
bool still_the_same(const PchInputs& inputs);

// What a compile's PCH is made of: `key` is empty when it gets none (no prefix worth one, an
// NVRTC before 12.8, or a forced include: -include and --pre-include come before the prefix).
struct PchSpec {
  std::string key;
  std::string prefix;  // the header prefix's text
  std::vector<std::string> options;
  std::vector<std::filesystem::path> toolkit_dirs;
};
PchSpec pch_spec(const std::string& source, size_t prefix, const std::vector<std::string>& options,
                 const std::vector<std::filesystem::path>& toolkit_dirs);

// A PCH held open for one compile: removing its file meanwhile changes nothing.
struct OpenPch {
  kiln::internal::UniqueFd fd;
  std::string path;  // what --use-pch= names: /proc/self/fd/<fd>, or the file when /proc is absent
};
// The PCH for `spec` in `dir`, when there is one and its manifest still holds; marks it used.
std::optional<OpenPch> open_pch(const std::filesystem::path& dir, const PchSpec& spec);
// Makes the PCH for `spec` (from the prefix alone) and its manifest, unless another process is
// making it; keeps the directory within its bounds, and the kernel cache within its size.
void make_pch(const std::filesystem::path& dir, const PchSpec& spec);
// Compiles with `pch` when given; when NVRTC still could not read it, compiles again without.
NvrtcAttempt attempt_with_pch(const std::string& source, const std::string& name,
                              const std::vector<std::string>& options, bool cubin,
                              const std::optional<OpenPch>& pch);

}  // namespace kiln::cuda::internal
