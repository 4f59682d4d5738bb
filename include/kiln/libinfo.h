// What this build of kiln is and what it can drive on this machine, as tvm.support.libinfo()
// and describe() report for TVM.
//
//   std::map<std::string, std::string> info = kiln::libinfo();
//   if (info["USE_CUDA"] == "ON") { ... }               // a CUDA toolkit was found
//   std::cout << kiln::describe_text(kiln::describe());  // version, compiler, uname, options
//
// libinfo() keys follow TVM's (USE_CUDA, USE_LLVM, ...). The USE_* entries are found by looking
// for the tools on this machine (no tool is run); build facts (GIT_COMMIT_HASH, BUILD_TYPE, ...)
// come from the build. Every environment variable TVM_USE_<X>=<value> overrides USE_<X>, as in
// TVM, so setups that force an option keep working.
#pragma once

#include <map>
#include <string>

namespace kiln {

// The options map, sorted by key.
std::map<std::string, std::string> libinfo();

struct Description {
  std::string version;     // "0.1.0"
  std::string git_commit;  // short hash of the source tree, or "unknown"
  std::string compiler;    // "GNU 12.2.0 (/usr/bin/c++)"
  // uname: sysname, nodename, release, version, machine.
  std::map<std::string, std::string> platform;
  std::map<std::string, std::string> options;  // libinfo()
};

Description describe();

// The human form: version, compiler, platform, then the options as key-sorted, indented JSON.
std::string describe_text(const Description& description);

// The machine form: one JSON object with keys version, git_commit, compiler, platform, options,
// and callbacks (the seed global functions kiln::callbacks serves).
std::string describe_json(const Description& description);

}  // namespace kiln
