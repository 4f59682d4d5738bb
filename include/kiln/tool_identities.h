// Who a tool is, for cache keys: the content of its executable (file_content_identity) and the
// first line of its `--version`, asked once per process and remembered across processes in
// kiln's local cache (so an all-cached build runs no tool at all). A reinstalled or upgraded
// compiler is a different tool; a symbolic link to the same file, or the same compiler on
// another machine or at another place, is the same tool.
//
//   kiln::Cache cache = kiln::Cache::open();
//   kiln::ToolIdentities identities(cache);
//   kiln::Recipe recipe = kiln::cc::object_recipe("add.o", {"add.c"});
//   identities.identify(recipe);   // recipe.tools[0].identity: "content:3f0a...e1 gcc (Debian
//                                  //   12.2.0-14) 12.2.0"
//
// Thread-safety: one ToolIdentities may be shared by many threads; each program is asked once
// even when several threads ask at the same time.
#pragma once

#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <string>

#include "kiln/cache.h"
#include "kiln/recipe.h"

namespace kiln {

class ToolIdentities {
 public:
  // `cache` (may be disabled) remembers `--version` answers, keyed by the file's identity. It
  // must outlive this object.
  explicit ToolIdentities(const Cache& cache) : cache_(cache) {}

  struct Identity {
    std::filesystem::path path{};  // the real file; empty when the program cannot be found
    std::string text{};            // "content:<hash> <first line of --version>"
  };
  // The identity of `program` found as run() finds it (kiln::program_path: a name on PATH, never
  // ./name first; or a path), a launcher's masquerade link (/usr/lib/ccache/gcc) passed over for
  // the compiler it stands for. A program that cannot be found is identified by its name alone;
  // one whose --version fails, by its file.
  Identity of(const std::string& program);
  // A file a tool reads (device libraries): file_content_identity(), or the path when it cannot
  // be read.
  static std::string of_file(const std::filesystem::path& file);
  // Fills `executable`, `path` and `identity` of every tool of `recipe` that runs as a program
  // (in-process tools keep the identity their module gave them), and makes the steps run exactly
  // what was identified: each step's argv[0], and the compiler after a ccache or sccache prefix,
  // becomes the absolute path found with that step's PATH and working directory (distcc and icecc
  // keep the compiler's name, which they send to other machines; the one identified is the one
  // they run here). A tool that runs in no step of its own is found as of() finds it. Throws
  // ToolNotFound or ToolNotExecutable, as run() would, for a step's program that is not there.
  void identify(Recipe& recipe);

 private:
  Identity find_out(const std::string& program);

  const Cache& cache_;
  std::mutex mutex_;
  std::map<std::string, std::shared_future<Identity>> known_;
};

}  // namespace kiln
