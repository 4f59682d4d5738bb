#include "testing/test_support.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>

#include "kiln/cache.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/file_lock.h"
#include "kiln/paths.h"
#include "kiln/pool.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "toolchains/cuda/nvrtc_library.h"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace kiln::testing {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void sleep_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// Writes `text` to `path` atomically, so a poller never sees half of it.
void publish(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  { std::ofstream(tmp) << text; }
  fs::rename(tmp, path);
}

void say(const std::string& line) {
  std::string text = line + "\n";
  [[maybe_unused]] ssize_t n = ::write(1, text.data(), text.size());
}

int spew(long bytes) {
  // Alternate stdout and stderr in 64 KiB pieces: a parent that drains only one of them, or
  // both in turn with blocking reads, deadlocks here.
  std::string out(size_t{64} * 1024, 'o');
  std::string err(size_t{64} * 1024, 'e');
  long left_out = bytes, left_err = bytes;
  while (left_out > 0 || left_err > 0) {
    for (auto [fd, piece, left] :
         {std::tuple{1, &out, &left_out}, std::tuple{2, &err, &left_err}}) {
      if (*left <= 0) continue;
      size_t n = static_cast<size_t>(std::min<long>(*left, static_cast<long>(piece->size())));
      size_t done = 0;
      while (done < n) {
        ssize_t w = ::write(fd, piece->data() + done, n - done);
        if (w <= 0) return 3;
        done += static_cast<size_t>(w);
      }
      *left -= static_cast<long>(n);
    }
  }
  return 0;
}

// A child that starts, in its own process group, a grandchild which ignores SIGTERM.
int tree() {
  std::string exe = self_exe();
  std::vector<std::string> args = child_argv("stubborn");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t grandchild = 0;
  if (posix_spawn(&grandchild, exe.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return 4;
  say("child " + std::to_string(::getpid()));
  sleep_forever();
}

int stubborn() {
  (void)::signal(SIGTERM, SIG_IGN);
  say("grandchild " + std::to_string(::getpid()));
  sleep_forever();
}

int lock_increment(const std::string& lock_path, const std::string& counter_path, int times) {
  for (int i = 0; i < times; ++i) {
    FileLock lock(lock_path);
    long value = 0;
    { std::ifstream(counter_path) >> value; }
    { std::ofstream(counter_path, std::ios::trunc) << value + 1; }
  }
  return 0;
}

int lock_hold(const std::string& lock_path, const std::string& ready_path) {
  FileLock lock(lock_path);
  publish(ready_path, std::to_string(::getpid()));
  sleep_forever();
}

int tempdirs_hold(const std::string& ready_path) {
  cleanup_tempdirs_on_signals();
  std::vector<TempDirectory> dirs(3);
  std::string paths;
  for (auto& d : dirs) {
    std::ofstream(d / "file") << "content";
    paths += d.path().string() + "\n";
  }
  publish(ready_path, paths);
  sleep_forever();
}

// A parent with one pool worker: publishes the worker's pid, then waits to be killed.
int pool_parent(const std::string& ready_path) {
  pool::Worker worker;
  pid_t pid = worker.call("pid", nullptr).get<pid_t>();
  publish(ready_path, std::to_string(pid));
  sleep_forever();
}

}  // namespace

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string self_exe() { return fs::read_symlink("/proc/self/exe").string(); }

std::vector<std::string> child_argv(const std::string& mode, const std::vector<std::string>& args) {
  std::vector<std::string> argv{self_exe(), kChildFlag, mode};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

int run_child_mode(int argc, char** argv) {
  std::string mode = argv[2];
  std::vector<std::string> a(argv + 3, argv + argc);
  auto arg = [&](size_t i) { return i < a.size() ? a[i] : std::string(); };
  if (mode == "exit") return std::atoi(arg(0).c_str());
  if (mode == "signal") {
    (void)::signal(std::atoi(arg(0).c_str()), SIG_DFL);
    (void)::raise(std::atoi(arg(0).c_str()));
    return 5;
  }
  if (mode == "echo-stdin") {
    std::cout << std::cin.rdbuf();
    return 0;
  }
  if (mode == "env") {
    const char* v = std::getenv(arg(0).c_str());
    std::cout << (v != nullptr ? v : "<unset>");
    return 0;
  }
  if (mode == "cwd") {
    std::cout << fs::current_path().string();
    return 0;
  }
  if (mode == "spew") return spew(std::atol(arg(0).c_str()));
  if (mode == "print") {
    std::cout << arg(0) << std::flush;
    std::cerr << arg(1) << std::flush;
    return std::atoi(arg(2).c_str());
  }
  if (mode == "sleep") {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(arg(0).c_str())));
    return 0;
  }
  if (mode == "fds") {  // the descriptors above stdio this process inherited
    for (int fd = 3; fd < 1024; ++fd) {
      if (::fcntl(fd, F_GETFD) != -1) std::cout << fd << " ";
    }
    return 0;
  }
  if (mode == "pool-parent") return pool_parent(arg(0));
  if (mode == "tree") return tree();
  if (mode == "cache-make") {  // DIR KEY BYTES: get_or_make, slowly, and print what it got
    Cache cache = Cache::open({.directory = arg(0), .enabled = true});
    std::string got = cache.get_or_make(arg(1), [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the others race
      return arg(2);
    });
    std::printf("%s\n", got.c_str());
    return 0;
  }
  if (mode == "cuda-compile") {  // CODE ARCH [SECONDS]: compile_cuda (cache as the environment
                                 // says), within a RunScope of SECONDS when given
    try {
      std::optional<RunScope> scope;
      if (a.size() > 2) {
        scope.emplace(
            RunScope::Limits{.deadline = std::chrono::steady_clock::now() +
                                         std::chrono::seconds(std::atoi(arg(2).c_str()))});
      }
      std::string bytes = cuda::compile_cuda(arg(0), {.arch = arg(1)});
      std::printf("%s\n", cache_key({bytes}).c_str());  // a digest of what it got
      return 0;
    } catch (const Error& e) {
      std::printf("%s\n", e.what());
      return 1;
    }
  }
  if (mode == "cuda-ptx") {  // CODE ARCH [OPTION...]: compile_cuda to PTX, printed whole
    try {
      std::vector<std::string> options(a.size() > 2 ? a.begin() + 2 : a.end(), a.end());
      std::string ptx = cuda::compile_cuda(
          arg(0), {.format = cuda::Format::ptx, .arch = arg(1), .options = std::move(options)});
      std::printf("%s\n", ptx.c_str());
      return 0;
    } catch (const Error& e) {
      std::printf("%s\n", e.what());
      return 1;
    }
  }
  if (mode == "nvrtc-version") {  // a fresh process: nothing loaded NVRTC before
    try {
      auto [major, minor] = cuda::nvrtc_version();
      std::printf("NVRTC %d.%d\n", major, minor);
      return 0;
    } catch (const Error& e) {
      std::printf("%s\n", e.what());
      return 1;
    }
  }
  if (mode == "stubborn") return stubborn();
  if (mode == "lock-increment") return lock_increment(arg(0), arg(1), std::atoi(arg(2).c_str()));
  if (mode == "lock-hold") return lock_hold(arg(0), arg(1));
  if (mode == "tempdirs-hold") return tempdirs_hold(arg(0));
  std::cerr << "unknown child mode " << mode << "\n";
  return 99;
}

std::string real_nvrtc_for_test(bool pch, std::string& why) {
  try {
    std::string real = cuda::internal::nvrtc().path;
    if (pch && cuda::nvrtc_version() < std::pair{12, 8}) {
      why = "precompiled headers need NVRTC 12.8";
      return "";
    }
    return real;
  } catch (const Error& e) {
    why = std::string("needs NVRTC: ") + e.what();
    return "";
  }
}

std::vector<int> open_fds() {
  std::vector<int> fds;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    fds.push_back(std::stoi(entry.path().filename().string()));
  }
  std::sort(fds.begin(), fds.end());
  return fds;
}

std::vector<pid_t> child_pids() {
  std::vector<pid_t> children;
  pid_t self = ::getpid();
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream status(entry.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.starts_with("PPid:")) {
        if (std::stoi(line.substr(5)) == self) children.push_back(std::stoi(name));
        break;
      }
    }
  }
  return children;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string captured_log(const std::string& name) {
  std::string text = read_file(fs::path(KILN_SOURCE_DIR) / "src/toolchains/testdata" / name);
  EXPECT_FALSE(text.empty()) << "src/toolchains/testdata/" << name << " is missing";
  return text;
}

size_t count_occurrences(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

pid_t find_process_with(std::string_view name, std::string_view variable) {
  std::string wanted = std::string(variable) + '\0';
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    // Unreadable (gone meanwhile, or not ours): read_file gives "".
    if (!read_file(entry.path() / "comm").starts_with(name)) continue;
    if (read_file(entry.path() / "environ").find(wanted) == std::string::npos) continue;
    if (!process_gone(std::stoi(pid))) return std::stoi(pid);
  }
  return 0;
}

bool process_gone(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  if (!status) return true;
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("State:")) {
      size_t at = line.find_first_not_of(" \t", 6);
      return at == std::string::npos || line[at] == 'Z' || line[at] == 'X';
    }
  }
  return true;
}

bool wait_process_gone(pid_t pid, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!process_gone(pid)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void wait_for_coarse_clock_past(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) throw SystemError("stat " + file.string(), errno);
  timespec now{};
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  } while (now.tv_sec < st.st_mtim.tv_sec ||
           (now.tv_sec == st.st_mtim.tv_sec && now.tv_nsec <= st.st_mtim.tv_nsec));
}

void write_tar_gz(const std::filesystem::path& path,
                  const std::vector<std::pair<std::string, std::string>>& members) {
  archive* writer = archive_write_new();
  archive_write_add_filter_gzip(writer);
  archive_write_set_format_pax_restricted(writer);
  ASSERT_EQ(archive_write_open_filename(writer, path.c_str()), ARCHIVE_OK);
  for (const auto& [name, data] : members) {
    archive_entry* entry = archive_entry_new();
    archive_entry_copy_pathname(entry, name.c_str());
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    archive_entry_set_size(entry, static_cast<la_int64_t>(data.size()));
    ASSERT_EQ(archive_write_header(writer, entry), ARCHIVE_OK);
    ASSERT_EQ(archive_write_data(writer, data.data(), data.size()),
              static_cast<la_ssize_t>(data.size()));
    archive_entry_free(entry);
  }
  EXPECT_EQ(archive_write_close(writer), ARCHIVE_OK);
  archive_write_free(writer);
}

std::optional<fs::path> find_cuobjdump() {
  if (std::optional<fs::path> found = which("cuobjdump")) return found;
  std::error_code ec;
  for (const auto& lib : fs::directory_iterator(KILN_SOURCE_DIR "/.deps/venv/lib", ec)) {
    fs::path tool = lib.path() / "site-packages/nvidia/cu13/bin/cuobjdump";
    if (fs::is_regular_file(tool)) return tool;
  }
  return std::nullopt;
}

std::string sass_listing(const fs::path& file) {
  std::optional<fs::path> cuobjdump = find_cuobjdump();
  if (!cuobjdump) return "cuobjdump failed: there is none";
  RunResult listing = run(
      {.argv = {cuobjdump->string(), "-sass", file.string()}, .timeout = std::chrono::seconds(60)});
  std::string text;
  std::istringstream lines(listing.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(file.filename().string()) == std::string::npos) text += line + "\n";
  }
  return listing.ok() ? text : "cuobjdump failed: " + listing.output;
}

std::map<std::string, std::string> sass_by_function(const std::string& listing) {
  std::map<std::string, std::string> functions;
  std::string* current = nullptr;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    size_t name = line.find("Function : ");
    if (name != std::string::npos) {
      current = &functions[line.substr(name + std::strlen("Function : "))];
      continue;
    }
    if (current == nullptr) continue;
    std::istringstream words(line);
    std::string word;
    std::string single;
    while (words >> word) {
      // "/*0040*/" is the instruction's address: it moves with the function's place.
      bool address = word.size() == 8 && word.starts_with("/*") && word.ends_with("*/");
      if (!address) single += (single.empty() ? "" : " ") + word;
    }
    if (!single.empty()) *current += single + "\n";
  }
  return functions;
}

}  // namespace kiln::testing
