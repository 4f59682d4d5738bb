// Who a tool is, for cache keys: the real path, size and modification time of its executable and
// the first line of its `--version`, asked once per process and remembered across processes in
// kiln's cache (so an all-cached build runs no tool at all). A reinstalled or upgraded compiler is
// a different tool; a symbolic link to the same file is the same tool.
//
//   kiln::Cache cache = kiln::Cache::open();
//   kiln::ToolIdentities identities(cache);
//   kiln::Recipe recipe = kiln::cc::object_recipe("add.o", {"add.c"});
//   identities.identify(recipe);   // recipe.tools[0].identity: "/usr/bin/x86_64-linux-gnu-gcc-12
//                                  //   1029552 1690000000.0 gcc (Debian 12.2.0-14) 12.2.0"
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
    std::string text{};            // "<real path> <size> <mtime> <first line of --version>"
  };
  // The identity of `program` found as run() finds it (a name on PATH, or a path). A program
  // that cannot be found is identified by its name alone; one whose --version fails, by its file.
  Identity of(const std::string& program);
  // A file a tool reads (device libraries): "<path> <size> <mtime>", or the path when it cannot
  // be stat-ed.
  static std::string of_file(const std::filesystem::path& file);
  // Fills `path` and `identity` of every tool of `recipe` that runs as a program (in-process
  // tools keep the identity their module gave them).
  void identify(Recipe& recipe);

 private:
  Identity find_out(const std::string& program);

  const Cache& cache_;
  std::mutex mutex_;
  std::map<std::string, std::shared_future<Identity>> known_;
};

}  // namespace kiln
