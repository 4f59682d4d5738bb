// Tar archives, in-process through libarchive (no `tar` binary needed), as tvm.support.tar.
//
//   kiln::tar("objects.tar", {"build/a.o", "build/b.o"});       // members "a.o", "b.o" (gzip)
//   kiln::untar("objects.tar", "unpacked/");                      // gzip or plain
//   kiln::untar("big.tar.gz", "unpacked/", {.max_bytes = uint64_t{64} << 30});  // limits
//   kiln::TempDirectory tmp;
//   std::vector<std::filesystem::path> objects =
//       kiln::normalize_file_list_by_unpacking_tars(tmp, {"x.o", "objects.tar"});
//   // -> {"x.o", "<tmp>/temp0/a.o", "<tmp>/temp0/b.o"}
//
// Extraction is safe against hostile archives: absolute paths, ".." components, symbolic or hard
// links that lead outside the target directory, paths through a symbolic link, device nodes,
// FIFOs and setuid/setgid bits are refused with an error naming the member, and nothing is ever
// written outside the target: every path is resolved by the kernel beneath the target directory
// (openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS), so even a link an earlier member or
// another process left there cannot lead out. untar() therefore needs Linux 5.6 or later.
// Errors: kiln::FileNotFound for a missing input; kiln::ArchiveError ("Tar error: ...", naming the
// archive and the member) for a bad archive, and its subclass kiln::UnsafeArchiveMember for a
// refused (hostile) member; kiln::InvalidArgument for two inputs with the same base name
// ("duplicate file name X"); kiln::SystemError for a failed system call.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/recipe.h"

namespace kiln {

class TempDirectory;

// Writes a gzip-compressed tar at `output` whose members are the base names of `files`, in the
// order given, with their bytes, permission bits (rwx only: setuid, setgid and sticky bits are
// dropped) and modification times; owners are not recorded. Each input must be a regular file
// (or a symbolic link to one). The archive is written to a temporary name beside `output` and
// renamed, so a failure leaves no partial archive and an existing `output` untouched.
// Compression is gzip level 1: the archives are intermediate build bundles, where speed matters
// more than the last few percent of size.
void tar(const std::filesystem::path& output, const std::vector<std::filesystem::path>& files);

// tar() as a recipe (kiln/recipe.h): one in-process step, whose tool is kiln's own tar
// ("kiln tar <kiln version>": the archive's bytes depend on kiln's code, not on a program).
Recipe tar_recipe(const std::filesystem::path& output,
                  const std::vector<std::filesystem::path>& files);

// The output format of tar(), for code that treats it like a compile function.
inline constexpr const char* kTarOutputFormat = "tar";

// Extracts every member of `archive` (plain, or compressed with gzip, bzip2, xz or zstd) into
// `directory`, which is created if missing, restoring modification times and exactly the
// members' rwx permission bits, whatever the umask (directories get theirs once their contents
// are written). Regular files, directories, and links that stay inside `directory` are
// extracted; anything else is refused (see above) before it is written, and extraction stops at
// the first refusal (members before it stay extracted). Missing parent directories are made
// (mode 0777 less the umask). A member replaces a file, symbolic link or empty directory of the
// same name already there (the link itself, never what it points to). A symbolic link may climb
// with leading ".." components no higher than `directory` and then only descend
// ("../lib64/libfoo.so" is fine, "a/../.." is not); symbolic links already in `directory` before
// the call are trusted when judging a new one, but no member is ever written through one.
// An archive that would expand past `options`' limits (a gzip bomb, millions of empty members)
// is refused with an ArchiveError naming the limit and how to raise it, and everything this call
// made (files, links, directories, the target itself if it created it) is removed again; files
// it had already replaced are not brought back. Member names are escaped in every message
// (kiln/text.h printable()).
// Thread-safety: untar() changes no process-wide state (neither the umask nor the working
// directory), so many threads may extract at once, into different directories.
struct UntarOptions {
  // The most bytes the regular members may hold in all, as their headers record them (checked
  // before a member is written). Default 8 GiB.
  uint64_t max_bytes = uint64_t{8} << 30;
  // The most members (headers of any type) the archive may have. Default 1,000,000.
  uint64_t max_members = 1'000'000;
};
void untar(const std::filesystem::path& archive, const std::filesystem::path& directory,
           const UntarOptions& options = {});

// Replaces every path ending in ".tar" by the regular files it contains (symbolic links are not
// listed), extracted into <temp>/temp0, <temp>/temp1, ... (one per archive, in order); other
// paths pass through in place. The files of one archive are listed sorted, so the result is
// deterministic.
std::vector<std::filesystem::path> normalize_file_list_by_unpacking_tars(
    const TempDirectory& temp, const std::vector<std::filesystem::path>& files);
// The same with <directory>/temp0, ... for any existing directory (a recipe's scratch space).
std::vector<std::filesystem::path> normalize_file_list_by_unpacking_tars(
    const std::filesystem::path& directory, const std::vector<std::filesystem::path>& files);

}  // namespace kiln
