// kiln doctor: the build-environment traps of the TVM build guide, as checks a machine runs.
// Each check returns a Finding; the CLI renders them as a table or JSON.
//
//   for (const kiln::doctor::Finding& f : kiln::doctor::run_checks())
//     if (f.status == kiln::doctor::Status::fail) std::cerr << f.check << ": " << f.fix << "\n";
//
// The Python side runs an interpreter (never a shell) to see what `import tvm` really loads:
//
//   for (const auto& f : kiln::doctor::check_python_tvm("/opt/venv/bin/python"))
//     std::cout << f.check << ": " << f.finding << "\n";
//
// `kiln doctor --dist` checks a distributed compile engine end to end instead:
//
//   for (const auto& f : kiln::doctor::check_dist({.engine = "sccache"}))
//     if (f.status != kiln::doctor::Status::pass) std::cout << f.check << ": " << f.fix << "\n";
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/enum_names.h"

namespace kiln::doctor {

enum class Status { pass, warn, fail };
inline constexpr EnumName<Status> kStatusNames[] = {
    {Status::pass, "PASS"}, {Status::warn, "WARN"}, {Status::fail, "FAIL"}};
static_assert(in_enum_order(kStatusNames, Status::fail), "a name for every Status");
std::string_view status_name(Status status);  // "PASS", "WARN", "FAIL"

struct Finding {
  std::string check;  // "C++ compiler", "CMake", ...
  Status status = Status::pass;
  std::string finding;  // what was found, and why it matters
  std::string fix;      // what to do about it ("" when nothing)
};

struct Options {
  std::filesystem::path llvm_config;  // the llvm-config to judge; "" = the first on PATH
  std::filesystem::path source;       // a git checkout whose submodules to check; "" = none
  std::filesystem::path library;      // a built shared library to check; "" = none
  std::filesystem::path python;       // the interpreter whose `import tvm` to check;
                                      // "" = python3 on PATH (skipped, saying so, when none)
};

// Every check, in a fixed order: C++ compiler, CMake, LLVM, CUDA, Python, the Python side of TVM
// (check_python_tvm), parallel jobs, ccache, the remote cache when one is set, then the submodules
// of options.source and the library options.library when given.
std::vector<Finding> run_checks(const Options& options = {});

// The individual checks (run_checks calls these).
Finding check_cxx_compiler();
Finding check_cmake();
Finding check_python();
Finding check_parallel_jobs();
Finding check_ccache();
// The selected llvm-config (version >= 14, headers present), whether clang / ld.lld / llvm-config
// on PATH are one LLVM major, and how many LLVM installations there are: up to three findings.
std::vector<Finding> check_llvm(const std::filesystem::path& llvm_config = {});
// The remote cache $KILN_REMOTE_CACHE names (none when unset): reachable, credentials
// accepted, a probe object written and read back (read-write), a lookup's latency.
std::vector<Finding> check_remote_cache();
// nvcc on PATH (its real toolkit), $CUDA_PATH and /usr/local/cuda: one version, their version
// files agreeing with their nvcc, and no newer than the driver when one is installed.
std::vector<Finding> check_cuda();
// Each submodule (recursively) at the commit the superproject's index records.
std::vector<Finding> check_submodules(const std::filesystem::path& source);

// How a library will be loaded: what is already in the process when it is. A library is judged
// in that context, not alone: TVM 0.27's libtvm_compiler.so needs libtvm_ffi.so, which no search
// from the library finds, yet it loads, because TVM's Python side loads tvm_ffi's libtvm_ffi.so
// (RTLD_GLOBAL) first, and the dynamic linker takes an already loaded object whose SONAME is the
// DT_NEEDED name without searching.
struct LoadContext {
  // Objects loaded before the library: each satisfies a DT_NEEDED name equal to its SONAME (or,
  // without one, its file name), and its dynamic symbols count as defined.
  std::vector<std::filesystem::path> preloaded{};
  // How the context was learned, said in the findings ("" = the library loaded on its own).
  std::string how{};
};

// The context TVM's Python package would load `library` in, modelled from the files (no Python
// runs): for a library in a TVM package's lib/ directory (site-packages/tvm/lib/ or a source
// tree's build/lib/ beside python/tvm/), libtvm_ffi.so of the tvm_ffi package beside it (found
// through its wheel RECORD, as tvm_ffi/libinfo.py does) and, for any library but the runtime,
// the libtvm_runtime.so TVM's search would pick (TVM_LIBRARY_PATH first). std::nullopt when the
// library is not in a TVM package's layout.
std::optional<LoadContext> tvm_package_context(const std::filesystem::path& library);

// A built shared library: its DT_NEEDED, a dynamic libLLVM, symbols nothing it loads defines,
// and symbol versions (GLIBCXX_, CXXABI_, GLIBC_) its libraries lack. The first form judges it
// in tvm_package_context(library) when there is one (and says so), else on its own.
std::vector<Finding> check_library(const std::filesystem::path& library);
std::vector<Finding> check_library(const std::filesystem::path& library,
                                   const LoadContext& context);

// The Python side, for `python` ("" = python3 on PATH; one PASS finding saying it was skipped
// when there is none): a child interpreter runs `import tvm` (argv, no shell; 180 s at most) and
// reports which tvm package it found and from where (PYTHONPATH, site-packages, the current
// directory), what the import mapped (/proc/<pid>/maps), which TVM libraries it loaded or
// silently skipped and why. Then: TVM_LIBRARY_PATH and TVM_HOME (relative, or naming nothing
// TVM can use), each loaded TVM library judged as check_library does in the context the import
// really had, and a conda LLVM (llvmdev) shadowing the system LLVM. When the import crashes or
// fails, the libraries it would load are modelled from the package's files instead, and the
// findings say so.
std::vector<Finding> check_python_tvm(const std::filesystem::path& python = {});

struct DistOptions {
  // The name of a launcher that distributes (kiln/launcher.h's distributing_launcher_names():
  // "sccache", "distcc", "icecc"; anything else is kiln::InvalidArgument); "" = the first of them
  // on PATH, in that order.
  std::string engine{};
  // The limit of each probe that asks a server something (a scheduler's status, a daemon's
  // socket); a trivial compile may take three times as long (sccache packages and uploads the
  // compiler on its first one). A probe that runs out says so in its finding.
  std::chrono::seconds timeout{20};
};

// The distributed compile engine kiln build's --launcher would use, checked end to end, each
// finding with its fix; kiln's own probes never touch the user's servers or caches.
//  - sccache: the program and its version; the client config (SCCACHE_CONF, else
//    ~/.config/sccache/config) and its [dist] scheduler_url; then, through a private sccache
//    client server (its own socket in a temporary directory, stopped by pid at the end), the
//    scheduler (`sccache --dist-status`), its build servers and CPUs (0 servers is a FAIL), and
//    one trivial C compile: the client token the scheduler accepted, and the compile counted in
//    the statistics' dist_compiles (else the reason from sccache's log).
//  - icecc: the program; a local iceccd on one of the sockets icecc tries; a trivial compile whose
//    ICECC_LOGFILE names the remote host the scheduler chose.
//  - distcc: the program; the hosts (DISTCC_HOSTS or a hosts file); a trivial compile with
//    DISTCC_FALLBACK=0 that its verbose log says ran on one of them.
std::vector<Finding> check_dist(const DistOptions& options = {});

// "3.22.1" -> {3, 22, 1}; missing fields are 0. Empty when the text holds no version.
std::vector<int> parse_version(std::string_view text);

}  // namespace kiln::doctor
