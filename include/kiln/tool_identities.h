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
  // The identity of `program` found as run() finds it (a name on PATH, or a path). A program
  // that cannot be found is identified by its name alone; one whose --version fails, by its file.
  Identity of(const std::string& program);
  // A file a tool reads (device libraries): file_content_identity(), or the path when it cannot
  // be read.
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
