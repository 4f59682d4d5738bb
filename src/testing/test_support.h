// Test support: the unit-test binary re-executes itself as a child with a named behaviour
// (as LLVM's tests do), and inspects /proc to prove no process or descriptor was left behind.
#pragma once

#include <sys/types.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::testing {

// The flag that makes the test binary act as a child: `kiln_unit_tests --kiln-test-child MODE ...`.
inline constexpr const char* kChildFlag = "--kiln-test-child";

// The absolute path of the running test binary.
std::string self_exe();

// argv that runs this binary as a child in `mode` with `args`.
std::vector<std::string> child_argv(const std::string& mode,
                                    const std::vector<std::string>& args = {});

// Runs the child behaviour named by argv[2]; returns its exit status. See test_child.cc.
int run_child_mode(int argc, char** argv);

// The descriptors open in this process, from /proc/self/fd.
std::vector<int> open_fds();

// Processes whose parent is this process (zombies included), from /proc.
std::vector<pid_t> child_pids();

// The whole content of a file ("" when it cannot be read).
std::string read_file(const std::filesystem::path& path);

// A tool's log captured under src/toolchains/testdata/ ("icecc/remote.log"; each folder's
// README.md says how it was made). The calling test fails when it is missing or empty.
std::string captured_log(const std::string& name);

// Writes a gzip-compressed tar of regular files {name, contents} (names taken as they are, so a
// test can give hostile ones) to `path`; fails the running test when libarchive refuses.
void write_tar_gz(const std::filesystem::path& path,
                  const std::vector<std::pair<std::string, std::string>>& members);

// How many times `needle` occurs in `haystack` (overlapping occurrences counted).
size_t count_occurrences(const std::string& haystack, const std::string& needle);

// For the SetUp of a test that runs the NVRTC stand-in in front of the real library: that
// library's path, or "" and `why` the test skips (no NVRTC; with `pch`, one older than 12.8, which
// makes no precompiled headers).
std::string real_nvrtc_for_test(bool pch, std::string& why);

// cuobjdump: on PATH, else the one scripts/install-deps.sh puts in the project's venv (NVIDIA's
// nvidia-cuda-cuobjdump wheel: the toolkit here has none); std::nullopt when neither is there.
std::optional<std::filesystem::path> find_cuobjdump();

// `cuobjdump -sass` of a cubin or fatbin, without the lines naming the file it read ("cuobjdump
// failed: ..." when it failed).
std::string sass_listing(const std::filesystem::path& file);

// Each function's machine code in `sass_listing`'s text, by name: its instructions with their
// encodings, white space made single (the listing pads each line to its own width).
std::map<std::string, std::string> sass_by_function(const std::string& listing);

// Waits (1 ms sleeps, no bound) until the kernel's coarse clock (CLOCK_REALTIME_COARSE, which
// stamps modification times) is past `file`'s modification time. kiln stores no cache entry whose
// input changed at or after its compile began, so a test that writes an input and builds at once,
// in the same clock tick, would see that entry rightly left out; waiting first makes it stored.
// Throws SystemError when `file` cannot be stat()ed.
void wait_for_coarse_clock_past(const std::filesystem::path& file);

// True when `pid` no longer exists or is a zombie (it has stopped running).
bool process_gone(pid_t pid);

// Polls process_gone(pid) for up to `timeout_ms`.
bool wait_process_gone(pid_t pid, int timeout_ms);

// A live process whose name starts with `name` and whose environment holds `variable` (e.g.
// "SCCACHE_SERVER_UDS=/tmp/x/server.sock"): its pid, or 0 when there is none.
pid_t find_process_with(std::string_view name, std::string_view variable);

// The message of the kiln::Error `fn` throws, or "no error".
std::string error_of(const std::function<void()>& fn);

// Sets (or, with std::nullopt, unsets) one environment variable for a scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    set(value);
  }
  ~ScopedEnv() { set(old_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void set(const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name_.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace kiln::testing
