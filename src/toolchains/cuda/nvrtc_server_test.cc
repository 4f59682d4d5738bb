// kiln's NVRTC compile server (nvrtc_server.h), driven as users drive it: each compile is a
// fresh process (this binary as a child) with its cache directory in a test directory. The
// NVRTC it loads is the stand-in (src/testing/nvrtc_standin.c): the real NVRTC, which also
// counts compiles, and crashes or hangs while a file of the test's exists.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"
#include "toolchains/cuda/nvrtc_library.h"
#include "toolchains/cuda/nvrtc_pch.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHalfKernel =
    "#include <cuda_fp16.h>\n"
    "extern \"C\" __global__ void add(half* a, half* b) { a[threadIdx.x] += b[threadIdx.x]; }\n";
constexpr const char* kOtherHalfKernel =
    "#include <cuda_fp16.h>\n"
    "extern \"C\" __global__ void mul(half* a) { a[threadIdx.x] *= a[threadIdx.x + 1]; }\n";
constexpr const char* kBrokenKernel =
    "extern \"C\" __global__ void broken(int* a) { a[0] = undeclared; }\n";

class NvrtcServer : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    real_ = testing::real_nvrtc_for_test(true, why);
    if (real_.empty()) GTEST_SKIP() << why;
  }

  // Compiles `code` for sm_80 in a fresh process; `seconds`: a deadline for it.
  RunResult compile(const std::string& code,
                    std::map<std::string, std::optional<std::string>> env = {},
                    const std::string& seconds = {}) {
    std::vector<std::string> args = {code, "sm_80"};
    if (!seconds.empty()) args.push_back(seconds);
    env.insert({{"KILN_CACHE_DIR", (dir_.path() / "cache").string()},
                {"KILN_NO_CACHE", "1"},
                {"KILN_NVRTC", KILN_TEST_NVRTC_STANDIN},
                {"KILN_REAL_NVRTC", real_},
                {"KILN_NVRTC_CALLS", calls().string()},
                {"KILN_NVRTC_CRASH", (dir_.path() / "crash").string()},
                {"KILN_NVRTC_HANG", (dir_.path() / "hang").string()},
                {"KILN_NVRTC_HANG_PCH", (dir_.path() / "hang-pch").string()},
                {"KILN_SERVER_IDLE", "60"}});
    return run({.argv = testing::child_argv("cuda-compile", args), .env = env});
  }
  fs::path calls() const { return dir_.path() / "calls"; }
  size_t count(const std::string& line) const {
    return testing::count_occurrences(testing::read_file(calls()), line + "\n");
  }
  size_t compiles() const { return count("compile"); }
  void touch(const std::string& name) { std::ofstream(dir_.path() / name).put('1'); }
  void remove(const std::string& name) { fs::remove(dir_.path() / name); }
  fs::path servers_dir() const { return dir_.path() / "cache" / "servers"; }
  size_t pch_files() const {
    size_t found = 0;
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(servers_dir(), ec)) {
      found += entry.path().extension() == ".pch" ? 1 : 0;
    }
    return found;
  }

  // The servers of this test's cache directory, from /proc.
  std::vector<pid_t> servers() const {
    std::vector<pid_t> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
      std::string cmdline = testing::read_file(entry.path() / "cmdline");
      if (cmdline.find(std::string("--kiln-service\0nvrtc\0", 21) + servers_dir().string()) !=
          std::string::npos) {
        found.push_back(std::stoi(entry.path().filename().string()));
      }
    }
    // Not the server's own children (compiles just ending), which have its command line too.
    std::vector<pid_t> servers;
    for (pid_t pid : found) {
      pid_t parent = parent_of(pid);
      if (std::find(found.begin(), found.end(), parent) == found.end()) servers.push_back(pid);
    }
    return servers;
  }
  // From /proc/PID/stat: the state letter and the parent; {"", 0} when it is gone.
  static std::pair<std::string, pid_t> state_of(pid_t pid) {
    std::string stat = testing::read_file("/proc/" + std::to_string(pid) + "/stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) return {"", 0};
    std::istringstream fields(stat.substr(close + 2));
    std::string state;
    pid_t parent = 0;
    fields >> state >> parent;
    return {state, parent};
  }
  static pid_t parent_of(pid_t pid) { return state_of(pid).second; }
  // The nice value of `pid` (/proc/PID/stat's 19th field, the 17th after the name).
  static int nice_of(pid_t pid) {
    std::string stat = testing::read_file("/proc/" + std::to_string(pid) + "/stat");
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 0; i < 17; ++i) fields >> field;
    return std::stoi(field);
  }
  // The processes whose parent is `pid`.
  static std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
      std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      auto [state, parent] = state_of(std::stoi(name));
      if (parent == pid && state != "Z") found.push_back(std::stoi(name));
    }
    return found;
  }

  // Whether `pid` has no live child, waiting up to `limit` for it.
  static bool no_children_within(pid_t pid, std::chrono::seconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!children_of(pid).empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return children_of(pid).empty();
  }

  TempDirectory dir_;  // removing it removes the socket: the server notices and ends
  std::string real_;
};

TEST_F(NvrtcServer, ServesTheSameBytesAsACompileInTheCallersProcess) {
  // The first compile of a header set answers, then makes the set's precompiled header.
  ASSERT_EQ(compile(kHalfKernel).exit_code, 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (pch_files() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(pch_files(), 1u);
  for (const char* code : {kHalfKernel, kOtherHalfKernel}) {
    RunResult served = compile(code);
    RunResult here = compile(code, {{"KILN_NO_SERVER", "1"}});
    ASSERT_EQ(served.exit_code, 0) << served.output;
    ASSERT_EQ(here.exit_code, 0) << here.output;
    EXPECT_EQ(served.output, here.output) << "the cubins' digests differ";
  }
  EXPECT_EQ(servers().size(), 1u) << "one server for all the compiles";
  EXPECT_EQ(pch_files(), 1u) << "both kernels start with cuda_fp16.h: one precompiled header";
}

TEST_F(NvrtcServer, AFailingCompileRunsTheCompilerOnce) {
  for (bool server : {true, false}) {
    fs::remove(calls());
    RunResult result =
        compile(kBrokenKernel, {{"KILN_NO_SERVER", server ? std::nullopt : std::optional("1")}});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_NE(result.output.find("undeclared"), std::string::npos) << result.output;
    EXPECT_EQ(compiles(), 1u) << (server ? "in the server" : "in process");
  }
}

TEST_F(NvrtcServer, ACrashTakesDownOneCompileNotTheServer) {
  ASSERT_EQ(compile(kHalfKernel).exit_code, 0);
  std::vector<pid_t> before = servers();
  ASSERT_EQ(before.size(), 1u);
  touch("crash");
  RunResult crashed = compile(kHalfKernel);
  remove("crash");
  EXPECT_EQ(crashed.exit_code, 1) << crashed.output;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizer's handler reports the SIGSEGV, then aborts (ASan) or exits 66 (TSan).
  EXPECT_NE(crashed.output.find("while compiling tvm_kernels.cu (in kiln's compile server)"),
            std::string::npos)
      << crashed.output;
#else
  EXPECT_NE(crashed.output.find("NVRTC killed by signal SIGSEGV while compiling"),
            std::string::npos)
      << crashed.output;
#endif
  RunResult after = compile(kOtherHalfKernel);
  EXPECT_EQ(after.exit_code, 0) << after.output;
  EXPECT_EQ(servers(), before) << "the same server goes on";
}

TEST_F(NvrtcServer, AHungCompileEndsAtTheCallersDeadlineAndIsKilled) {
  ASSERT_EQ(compile(kHalfKernel).exit_code, 0);
  std::vector<pid_t> server = servers();
  ASSERT_EQ(server.size(), 1u);
  // The first compile's child goes on to make the PCH after answering (seconds on a loaded
  // machine): it must be gone first, so that the only child left to judge is the hung one.
  ASSERT_TRUE(no_children_within(server[0], std::chrono::seconds(120)))
      << "the first compile's child never finished its PCH";
  touch("hang");
  RunResult hung = compile(kOtherHalfKernel, {}, "1");
  EXPECT_EQ(hung.exit_code, 1) << hung.output;
  EXPECT_NE(hung.output.find("timed out"), std::string::npos) << hung.output;
  EXPECT_TRUE(no_children_within(server[0], std::chrono::seconds(10)))
      << "the server killed the hung compile";
  remove("hang");
  EXPECT_EQ(compile(kOtherHalfKernel).exit_code, 0);
}

TEST_F(NvrtcServer, ACompileWhileItsPchIsBeingMadeGoesOnWithoutItAndTheMakerYields) {
  touch("hang-pch");  // the PCH's compile sleeps until the file is gone
  ASSERT_EQ(compile(kHalfKernel).exit_code, 0) << "answered before its PCH is made";
  std::vector<pid_t> server = servers();
  ASSERT_EQ(server.size(), 1u);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (count("create-pch") == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(count("create-pch"), 1u) << "the first compile's child never began its PCH";
  std::vector<pid_t> makers = children_of(server[0]);
  ASSERT_EQ(makers.size(), 1u);
  EXPECT_EQ(nice_of(makers[0]), internal::kPchNice) << "its CPU priority";
  EXPECT_EQ(::syscall(SYS_ioprio_get, 1, makers[0]), 3 << 13) << "its I/O priority: idle";

  // Same header set, its PCH's lock held: compiled at once without one, the maker still asleep.
  RunResult other = compile(kOtherHalfKernel);
  EXPECT_EQ(other.exit_code, 0) << other.output;
  EXPECT_EQ(count("use-pch"), 0u);
  EXPECT_EQ(count("create-pch"), 1u) << "its child left the PCH to the one making it";
  std::vector<pid_t> after = children_of(server[0]);
  EXPECT_NE(std::find(after.begin(), after.end(), makers[0]), after.end())
      << "the maker was still asleep";
  EXPECT_EQ(nice_of(server[0]), nice_of(::getpid())) << "the server keeps its priority";
  remove("hang-pch");
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (pch_files() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(pch_files(), 1u) << "made once the stand-in let it";
}

TEST_F(NvrtcServer, ItEndsWhenIdleAndTakesItsFilesAlong) {
  ASSERT_EQ(compile(kHalfKernel, {{"KILN_SERVER_IDLE", "1"}}).exit_code, 0);
  std::vector<pid_t> server = servers();
  ASSERT_EQ(server.size(), 1u);
  EXPECT_TRUE(testing::wait_process_gone(server[0], 10000));
  for (const auto& entry : fs::directory_iterator(servers_dir())) {
    EXPECT_EQ(entry.path().extension(), ".lock") << entry.path() << " was left behind";
  }
}

TEST_F(NvrtcServer, ItEndsWhenItsSocketIsRemoved) {
  ASSERT_EQ(compile(kHalfKernel).exit_code, 0);
  std::vector<pid_t> server = servers();
  ASSERT_EQ(server.size(), 1u);
  for (const auto& entry : fs::directory_iterator(servers_dir())) {
    if (entry.path().extension() == ".sock") fs::remove(entry.path());
  }
  EXPECT_TRUE(testing::wait_process_gone(server[0], 5000));
}

TEST_F(NvrtcServer, AKilledServerIsReplacedByTheNextCompile) {
  ASSERT_EQ(compile(kHalfKernel).exit_code, 0);
  std::vector<pid_t> first = servers();
  ASSERT_EQ(first.size(), 1u);
  ::kill(first[0], SIGKILL);  // its socket stays behind, refusing connections
  ASSERT_TRUE(testing::wait_process_gone(first[0], 5000));
  RunResult again = compile(kOtherHalfKernel);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  std::vector<pid_t> second = servers();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second[0], first[0]);
}

}  // namespace
}  // namespace kiln::cuda
