// The compile server's precompiled headers (nvrtc_pch.h), through the server as users reach it:
// each compile is a fresh process (this binary as a child) with its cache directory in a test
// directory and the kernel cache off, so that every answer is a compile in the server. NVRTC is
// the stand-in (src/testing/nvrtc_standin.c): the real NVRTC, which also counts the PCH files
// made and used, and removes the one a compile is to use while a file of the test's exists.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "kiln/cache.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/file_lock.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"
#include "toolchains/cuda/nvrtc_library.h"
#include "toolchains/cuda/nvrtc_pch.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;
using Env = std::map<std::string, std::optional<std::string>>;

// A user's header named like the toolkit's, found through -I: its value shows in the PTX.
std::string header_with_value(int value) {
  return "#ifndef KILN_USER_X_H\n#define KILN_USER_X_H\n#define KILN_VALUE " +
         std::to_string(value) + "\n#endif\n";
}
constexpr const char* kValueKernel =
    "#include <cuda_fp16.h>\n"
    "#include <cuda/x.h>\n"
    "extern \"C\" __global__ void k(int* a) { a[0] = KILN_VALUE; }\n";
// The smallest prefix worth a PCH: its files are made in a fraction of a second.
constexpr const char* kSmallKernel =
    "#include <cuda/std/climits>\n"
    "extern \"C\" __global__ void k(int* a) { a[0] = 1; }\n";
constexpr const char* kHalfKernel =
    "#include <cuda_fp16.h>\n"
    "extern \"C\" __global__ void add(half* a, half* b) { a[threadIdx.x] += b[threadIdx.x]; }\n";

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

class NvrtcPch : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    real_ = testing::real_nvrtc_for_test(true, why);
    if (real_.empty()) GTEST_SKIP() << why;
  }

  // Compiles `code` to PTX in a fresh process running in `cwd` (the test directory when empty).
  RunResult ptx(const std::string& code, const std::vector<std::string>& options,
                const fs::path& cwd = {}, const std::string& arch = "sm_80", Env env = {}) {
    std::vector<std::string> args = {code, arch};
    args.insert(args.end(), options.begin(), options.end());
    env.insert({{"KILN_CACHE_DIR", cache_dir().string()},
                {"KILN_NO_CACHE", "1"},
                {"KILN_NVRTC", KILN_TEST_NVRTC_STANDIN},
                {"KILN_REAL_NVRTC", real_},
                {"KILN_NVRTC_CALLS", calls().string()},
                {"KILN_NVRTC_REMOVE_PCH", (dir_.path() / "remove-pch").string()},
                {"KILN_SERVER_IDLE", "60"}});
    return run({.argv = testing::child_argv("cuda-ptx", args),
                .cwd = cwd.empty() ? dir_.path() : cwd,
                .env = env});
  }
  fs::path cache_dir() const { return dir_.path() / "cache"; }
  fs::path servers_dir() const { return cache_dir() / "servers"; }
  fs::path calls() const { return dir_.path() / "calls"; }
  size_t count(const std::string& line) const {
    return testing::count_occurrences(testing::read_file(calls()), line + "\n");
  }
  size_t made() const { return count("create-pch"); }  // PCH files NVRTC was asked to make
  size_t used() const { return count("use-pch"); }     // compiles NVRTC was given one for

  // The files under the servers' private directories whose names end in `suffix`.
  std::vector<fs::path> server_files(const std::string& suffix) const {
    std::vector<fs::path> found;
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(servers_dir(), ec)) {
      std::string name = entry.path().string();
      if (entry.path().parent_path() != servers_dir() && name.ends_with(suffix)) {
        found.push_back(entry.path());
      }
    }
    return found;
  }
  // Waits until `n` PCH files were asked for and none is still being made.
  void wait_made(size_t n) const {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline &&
           (made() < n || !server_files(".tmp").empty() || !server_files(".lock").empty())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_GE(made(), n) << "the server never made PCH file " << n;
    ASSERT_TRUE(server_files(".tmp").empty()) << "a PCH file is still being made after 120 s";
  }
  // The server of this test's cache directory (not one of its compile children, which have its
  // command line too), from /proc; 0 when none runs.
  pid_t server_pid() const {
    std::string wanted = std::string("--kiln-service\0nvrtc\0", 21) + servers_dir().string();
    std::vector<pid_t> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
      std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      if (testing::read_file(entry.path() / "cmdline").find(wanted) != std::string::npos &&
          !testing::process_gone(std::stoi(name))) {
        found.push_back(std::stoi(name));
      }
    }
    for (pid_t pid : found) {
      std::string stat = testing::read_file("/proc/" + std::to_string(pid) + "/stat");
      pid_t parent = std::atoi(stat.substr(stat.rfind(')') + 4).c_str());
      if (std::find(found.begin(), found.end(), parent) == found.end()) return pid;
    }
    return 0;
  }
  // The servers' private directories (nvrtc-<id>.d) but `except`.
  std::vector<fs::path> server_dirs(const std::string& except = "") const {
    std::vector<fs::path> dirs;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(servers_dir(), ec)) {
      if (entry.path().extension() == ".d" && entry.path().filename() != except) {
        dirs.push_back(entry.path());
      }
    }
    return dirs;
  }
  Cache cache() const { return Cache::open({.directory = cache_dir(), .enabled = true}); }
  void touch(const std::string& name) { std::ofstream(dir_.path() / name).put('1'); }
  void remove(const std::string& name) { fs::remove(dir_.path() / name); }

  TempDirectory dir_;  // removing it removes the socket: the server notices and ends
  std::string real_;
};

TEST_F(NvrtcPch, AnEditedUserHeaderNamedLikeTheToolkitsIsReadAgain) {
  fs::path inc = dir_.path() / "inc";
  write(inc / "cuda" / "x.h", header_with_value(1112));
  RunResult first = ptx(kValueKernel, {"-I" + inc.string()});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("1112"), std::string::npos) << first.output;
  wait_made(1);
  write(inc / "cuda" / "x.h", header_with_value(2223));
  RunResult edited = ptx(kValueKernel, {"-I" + inc.string()});
  ASSERT_EQ(edited.exit_code, 0) << edited.output;
  EXPECT_NE(edited.output.find("2223"), std::string::npos)
      << "the PTX holds the header's old value:\n"
      << edited.output;
  EXPECT_EQ(used(), 1u) << "the toolkit's cuda_fp16.h still comes from the PCH";
}

TEST_F(NvrtcPch, TwoProjectsWithTheSameRelativeIncludeDirectoryGetTheirOwnHeader) {
  fs::path a = dir_.path() / "a";
  fs::path b = dir_.path() / "b";
  write(a / "inc" / "cuda" / "x.h", header_with_value(1112));
  write(b / "inc" / "cuda" / "x.h", header_with_value(2223));
  RunResult in_a = ptx(kValueKernel, {"-Iinc"}, a);
  ASSERT_EQ(in_a.exit_code, 0) << in_a.output;
  EXPECT_NE(in_a.output.find("1112"), std::string::npos) << in_a.output;
  wait_made(1);
  RunResult in_b = ptx(kValueKernel, {"-Iinc"}, b);
  ASSERT_EQ(in_b.exit_code, 0) << in_b.output;
  EXPECT_NE(in_b.output.find("2223"), std::string::npos) << "b's compile got a's header:\n"
                                                         << in_b.output;
}

TEST_F(NvrtcPch, AUserHeaderWithoutAGuardIsIncludedOnce) {
  fs::path inc = dir_.path() / "inc";
  write(inc / "cuda" / "y.h", "__device__ inline int kiln_seven() { return 7; }\n");
  std::string kernel =
      "#include <cuda_fp16.h>\n"
      "#include <cuda/y.h>\n"
      "extern \"C\" __global__ void k(int* a) { a[0] = kiln_seven(); }\n";
  RunResult result = ptx(kernel, {"-I" + inc.string()});
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output.find("already been defined"), std::string::npos) << result.output;
}

TEST_F(NvrtcPch, APchRemovedBeforeNvrtcOpensItFailsNoCompile) {
  ASSERT_EQ(ptx(kHalfKernel, {}).exit_code, 0);
  wait_made(1);
  RunResult here = ptx(kHalfKernel, {}, {}, "sm_80", {{"KILN_NO_SERVER", "1"}});
  ASSERT_EQ(here.exit_code, 0) << here.output;
  touch("remove-pch");  // the stand-in removes the PCH file after kiln chose it
  RunResult served = ptx(kHalfKernel, {});
  remove("remove-pch");
  EXPECT_EQ(served.exit_code, 0) << served.output;
  EXPECT_EQ(served.output, here.output);
  EXPECT_EQ(used(), 1u) << "the compile was given the PCH that was then removed";
}

TEST_F(NvrtcPch, AReusedPchOutlivesEveryOtherKept) {
  // One prefix used between compiles of as many others as the server keeps: FIFO eviction
  // would drop the reused one, the oldest made, when the last other one is made.
  auto key = [](size_t i) { return "-DKILN_KEY=" + std::to_string(i); };
  ASSERT_EQ(ptx(kSmallKernel, {key(0)}).exit_code, 0);
  wait_made(1);
  for (size_t i = 1; i <= internal::kMaxPchFiles; ++i) {
    ASSERT_EQ(ptx(kSmallKernel, {key(i)}).exit_code, 0);
    wait_made(i + 1);
    ASSERT_EQ(ptx(kSmallKernel, {key(0)}).exit_code, 0);
    EXPECT_EQ(used(), i) << "the reused PCH was not used after " << i << " others were made";
  }
  EXPECT_EQ(made(), internal::kMaxPchFiles + 1) << "the reused PCH was made again";
  EXPECT_EQ(server_files(".pch").size(), internal::kMaxPchFiles);
}

TEST_F(NvrtcPch, ARoundRobinOverTenArchsReusesEveryPch) {
  std::vector<std::string> archs = {"sm_75", "sm_80", "sm_86",  "sm_87",  "sm_88",
                                    "sm_89", "sm_90", "sm_100", "sm_103", "sm_120"};
  for (size_t i = 0; i < archs.size(); ++i) {
    ASSERT_EQ(ptx(kSmallKernel, {}, {}, archs[i]).exit_code, 0) << archs[i];
    wait_made(i + 1);
  }
  for (const std::string& arch : archs) {
    RunResult again = ptx(kSmallKernel, {}, {}, arch);
    ASSERT_EQ(again.exit_code, 0) << arch << ": " << again.output;
  }
  EXPECT_EQ(used(), archs.size()) << "every arch's PCH is used in the second round";
  EXPECT_EQ(made(), archs.size()) << "none was made again";
}

TEST_F(NvrtcPch, AKilledServersDirectoryIsReapedAndALiveOnesNever) {
  // A directory whose lock is held (here by this process) is a live server's.
  write(servers_dir() / "nvrtc-live.d" / "kept.pch", "made by a live server");
  FileLock live(servers_dir() / "nvrtc-live.d.lock");
  ASSERT_EQ(ptx(kHalfKernel, {}).exit_code, 0);
  wait_made(1);
  pid_t server = server_pid();
  ASSERT_GT(server, 0);
  std::vector<fs::path> dirs = server_dirs("nvrtc-live.d");
  ASSERT_EQ(dirs.size(), 1u);
  ::kill(-server, SIGKILL);  // the server and its children: its own process group
  ASSERT_TRUE(testing::wait_process_gone(server, 10000));
  ASSERT_TRUE(fs::exists(dirs[0])) << "what a killed server leaves";
  // The lock is free once the last of the group has closed it: the server's compile children
  // (forked, so they hold it too) may die a little after the server (under TSan, ~100 ms).
  Cache::Stats stats = cache().stats();
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       fs::exists(dirs[0]) && std::chrono::steady_clock::now() < end;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stats = cache().stats();
  }
  EXPECT_FALSE(fs::exists(dirs[0])) << "stats() reaps a dead server's directory";
  EXPECT_EQ(stats.server_files, 1u) << "the live server's file";
  EXPECT_TRUE(fs::exists(servers_dir() / "nvrtc-live.d" / "kept.pch"));

  // The next server's start reaps too.
  write(servers_dir() / "nvrtc-dead.d" / "left.pch", "made by a server since killed");
  write(servers_dir() / "nvrtc-dead.d.lock", "");
  ASSERT_EQ(ptx(kHalfKernel, {}).exit_code, 0);
  EXPECT_NE(server_pid(), 0);
  EXPECT_FALSE(fs::exists(servers_dir() / "nvrtc-dead.d")) << "reaped by the server's start";
  EXPECT_TRUE(fs::exists(servers_dir() / "nvrtc-live.d" / "kept.pch"));
}

TEST_F(NvrtcPch, ClearingTheCacheLeavesARunningServerWorking) {
  ASSERT_EQ(ptx(kHalfKernel, {}).exit_code, 0);
  wait_made(1);
  pid_t server = server_pid();
  ASSERT_GT(server, 0);
  EXPECT_GT(cache().stats().server_bytes, 1u << 20) << "the PCH is counted";
  cache().clear();
  EXPECT_TRUE(server_files(".pch").empty()) << "kiln cache clear removes the PCH files";
  EXPECT_EQ(cache().stats().server_files, 0u);
  RunResult after = ptx(kHalfKernel, {});
  EXPECT_EQ(after.exit_code, 0) << after.output;
  EXPECT_EQ(server_pid(), server) << "the same server goes on";
  wait_made(2);
  EXPECT_EQ(server_files(".pch").size(), 1u) << "and makes the PCH again";
}

}  // namespace
}  // namespace kiln::cuda
