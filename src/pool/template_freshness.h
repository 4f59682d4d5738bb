// Whether what a template service imported is still what a fresh worker would import: the
// state, at its preparation, of every file it loaded (its modules, its shared libraries, the
// interpreter) and of the names in each directory it imported from that could shadow what it
// found there. A later caller is served only while all of it is unchanged.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::internal {

class Freshness {
 public:
  // `sources` (from the template's prepare hook, TemplateHooks::sources): "f<path>" for a file
  // whose content matters, "d<directory>\t<stem>\t..." for a directory in which an entry named
  // <stem>, <stem>.<anything> (or, for the stem "*.pth", any *.pth) would change what is
  // imported. The shared objects mapped into this process and its executable are added.
  static Freshness record(const std::vector<std::string>& sources);

  // What changed since record(), for a message ("/x/y.py changed"), or "" when nothing did.
  std::string stale_reason() const;
  std::size_t files() const noexcept { return files_.size(); }

 private:
  struct File {
    std::string path;
    dev_t dev = 0;
    ino_t ino = 0;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;
    std::string digest;  // written so recently that a change may not show in the times
  };
  struct Directory {
    std::string path;
    std::vector<std::string> stems;
    std::string entries;  // the names that match, sorted, one a line
  };
  std::vector<File> files_;
  std::vector<Directory> directories_;
};

}  // namespace kiln::internal
