// Temporary directories that clean up after themselves, as tvm.support's TempDirectory does.
//
// A TempDirectory is a fresh private (0700) directory, removed with its contents when the object
// is destroyed, when remove() is called, or at process exit, whichever comes first. In
// keep-for-debug mode directories are never removed; they live at
// $TMPDIR/kiln-debug-mode-tempdirs/<YYYY-MM-DDTHH-MM-SS>___<random>/<NNNNN>, one timestamped
// parent per process and a 5-digit process-wide sequence number each.
//
//   kiln::TempDirectory tmp;                       // e.g. /tmp/kiln-a8Xk2q
//   std::ofstream(tmp / "add.c") << "int add(int a, int b) { return a + b; }";
//   {
//     auto keep = kiln::set_keep_for_debug();     // directories made in this scope are kept
//     kiln::TempDirectory debug;                   //
//     .../kiln-debug-mode-tempdirs/<stamp>___x/00000
//   }
//
// Thread-safety: creating, moving and removing directories from many threads at once is safe.
// After the at-exit cleanup (remove_tempdirs()) has run, creating one throws
// DirectoryCreatedPastAtExit.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/error.h"

namespace kiln {

// Creating a TempDirectory after the process-exit cleanup ran (a call in the wrong state).
class DirectoryCreatedPastAtExit : public InvalidState {
 public:
  DirectoryCreatedPastAtExit();
};

struct TempDirectoryOptions {
  // Make exactly this directory (its parent must exist; an existing path is an error).
  std::filesystem::path custom_path{};
  // Keep the directory for debugging; std::nullopt follows set_keep_for_debug().
  std::optional<bool> keep_for_debug{};
};

class TempDirectory {
 public:
  // Creates the directory. Throws DirectoryCreatedPastAtExit after the exit cleanup, SystemError
  // when it cannot be made (the custom path exists, no permission, ...), and UnusableDirectory
  // when the shared debug parent is not a private directory of the current user.
  explicit TempDirectory(const TempDirectoryOptions& options = {});
  TempDirectory(TempDirectory&& other) noexcept;
  TempDirectory& operator=(TempDirectory&& other) noexcept;
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;
  // Removes the directory unless it is kept; errors are ignored (call remove() to see them).
  ~TempDirectory();

  // The directory; empty once removed.
  const std::filesystem::path& path() const noexcept { return path_; }
  // path() / name.
  std::filesystem::path relpath(std::string_view name) const;
  std::filesystem::path operator/(std::string_view name) const { return relpath(name); }
  // Names of the entries in the directory, sorted.
  std::vector<std::string> listdir() const;
  // True when this directory is kept for debugging (never removed by kiln).
  bool kept() const noexcept { return keep_; }
  // Removes the directory and its contents now (a kept one is only forgotten). Idempotent.
  // Throws SystemError when removal fails.
  void remove();

 private:
  std::filesystem::path path_;
  bool keep_ = false;
};

// The seed's spelling: tempdir(custom_path, keep_for_debug).
TempDirectory tempdir(const std::filesystem::path& custom_path = {},
                      std::optional<bool> keep_for_debug = std::nullopt);

// Scoped switch of the keep-for-debug default; the previous value returns when it goes away.
class KeepForDebug {
 public:
  explicit KeepForDebug(bool keep = true);
  ~KeepForDebug();
  KeepForDebug(const KeepForDebug&) = delete;
  KeepForDebug& operator=(const KeepForDebug&) = delete;

 private:
  bool previous_;
};

// The seed's spelling: `auto guard = kiln::set_keep_for_debug();`.
[[nodiscard]] KeepForDebug set_keep_for_debug(bool keep = true);

// The current keep-for-debug default.
bool keep_for_debug();

// Removes every live, non-kept temp directory and refuses new ones from then on. Runs at
// process exit by itself; calling it again does nothing.
void remove_tempdirs();

// Opt-in: on SIGINT or SIGTERM, remove every live, non-kept temp directory, then let the signal
// take its previous course (by default, ending the process by that signal). Idempotent.
// Throws SystemError when the handlers cannot be installed.
void cleanup_tempdirs_on_signals();

}  // namespace kiln
