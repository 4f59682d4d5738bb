// kiln's NVRTC compile server (nvrtc_server.h) under clients that misbehave: connections that
// never send, clients stopped (SIGSTOP) before they take their answers, requests over the limit.
// Each compile is a fresh process (this binary as a child) with no deadline of its own, as
// `kiln cuda compile` and Python's compile_cuda are; the NVRTC is the stand-in
// (src/testing/nvrtc_standin.c), which hangs while a file of the test's exists.
#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "internal/fd.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"
#include "toolchains/cuda/nvrtc_library.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;
using kiln::internal::UniqueFd;
using Clock = std::chrono::steady_clock;

// No headers: no precompiled header is made, so the stand-in counts only the compiles.
constexpr const char* kSmallKernel = "extern \"C\" __global__ void one(int* a) { a[0] = 1; }\n";
// A 4 MB cubin: far more than a socket's buffer holds, so a client that does not read holds
// up the child sending it.
constexpr const char* kBigKernel =
    "__device__ int big_table[1 << 20] = {1, 2, 3};\n"
    "extern \"C\" __global__ void big(int* a) { a[threadIdx.x] = big_table[threadIdx.x]; }\n";

class NvrtcServerFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    real_ = testing::real_nvrtc_for_test(false, why);
    if (real_.empty()) GTEST_SKIP() << why;
  }

  // Compiles `code` for sm_80 in a fresh process with no deadline of its own; `limit` only
  // ends a test that would hang.
  RunResult compile(const std::string& code, std::chrono::seconds limit) {
    return run({.argv = testing::child_argv("cuda-compile", {code, "sm_80"}),
                .env = {{"KILN_CACHE_DIR", (dir_.path() / "cache").string()},
                        {"KILN_NO_CACHE", "1"},
                        {"KILN_NVRTC", KILN_TEST_NVRTC_STANDIN},
                        {"KILN_REAL_NVRTC", real_},
                        {"KILN_NVRTC_CALLS", calls().string()},
                        {"KILN_NVRTC_HANG", hang().string()},
                        {"KILN_SERVER_IDLE", "60"}},
                .timeout = limit});
  }
  fs::path calls() const { return dir_.path() / "calls"; }
  fs::path hang() const { return dir_.path() / "hang"; }
  size_t compiles() const {
    return testing::count_occurrences(testing::read_file(calls()), "compile\n");
  }
  // The server's socket (one compile must have started it).
  fs::path socket() const {
    for (const auto& entry : fs::directory_iterator(dir_.path() / "cache" / "servers")) {
      if (entry.path().extension() == ".sock") return entry.path();
    }
    return {};
  }
  static size_t slots() { return std::max<size_t>(2, std::thread::hardware_concurrency()); }

  TempDirectory dir_;  // removing it removes the socket: the server notices and ends
  std::string real_;
};

UniqueFd connect_to(const fs::path& socket) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return {};
  return fd;
}

// Everything `fd` says until it closes or `limit` passes.
std::string read_until_closed(int fd, std::chrono::seconds limit) {
  std::string got;
  auto deadline = Clock::now() + limit;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return got;
    char chunk[4096];
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) return got;
    got.append(chunk, static_cast<size_t>(n));
  }
}

// The processes of this test that compile `code`.
std::vector<pid_t> compiling(const std::string& code) {
  std::vector<pid_t> found;
  for (pid_t pid : descendant_processes(::getpid())) {
    std::string cmdline = testing::read_file("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmdline.find(code) != std::string::npos) found.push_back(pid);
  }
  return found;
}

// The server's compile children: the processes whose command line names `socket` (they share
// the server's) and whose parent does too.
std::vector<pid_t> server_children(const fs::path& socket) {
  std::vector<pid_t> named;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string cmdline = testing::read_file(entry.path() / "cmdline");
    if (cmdline.find(socket.string()) != std::string::npos) {
      named.push_back(std::stoi(entry.path().filename().string()));
    }
  }
  std::vector<pid_t> children;
  for (pid_t pid : named) {
    std::string stat = testing::read_file("/proc/" + std::to_string(pid) + "/stat");
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string state;
    pid_t parent = 0;
    fields >> state >> parent;
    if (state != "Z" && std::find(named.begin(), named.end(), parent) != named.end()) {
      children.push_back(pid);
    }
  }
  return children;
}

TEST_F(NvrtcServerFaults, SilentConnectionsDoNotKeepACompileWaiting) {
  ASSERT_TRUE(compile(kSmallKernel, std::chrono::seconds(120)).ok());  // the server runs
  // Twice as many connections that never send as the server has compile slots: each one took a
  // slot for 30 s, so a compile behind them waited a minute (or for ever, behind more).
  std::vector<UniqueFd> silent;
  for (size_t i = 0; i < 2 * slots(); ++i) {
    silent.push_back(connect_to(socket()));
    ASSERT_TRUE(silent.back()) << "connection " << i << ": " << std::strerror(errno);
  }
  RunResult after = compile(kSmallKernel, std::chrono::seconds(40));
  EXPECT_TRUE(after.ok()) << after.status_text() << ": " << after.output;
}

TEST_F(NvrtcServerFaults, StoppedClientsDoNotKeepACompileWaiting) {
  ASSERT_TRUE(compile(kSmallKernel, std::chrono::seconds(120)).ok());  // the server runs
  fs::remove(calls());
  std::ofstream(hang()).put('1');  // the compiles hang in NVRTC until the file goes
  std::vector<std::thread> clients;
  std::vector<RunResult> results(slots());
  for (size_t i = 0; i < slots(); ++i) {
    clients.emplace_back([&, i] { results[i] = compile(kBigKernel, std::chrono::seconds(300)); });
  }
  auto deadline = Clock::now() + std::chrono::seconds(120);
  while (compiles() < slots() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(compiles(), slots()) << "each client's compile started in the server";
  // Stopped (Ctrl-Z, a debugger) while waiting: the 4 MB answers are made, and nobody takes
  // them. Their children held the slots for the hour a child may live.
  std::vector<pid_t> stopped = compiling(kBigKernel);
  EXPECT_EQ(stopped.size(), slots());
  for (pid_t pid : stopped) ::kill(pid, SIGSTOP);
  fs::remove(hang());
  RunResult after = compile(kSmallKernel, std::chrono::seconds(60));
  EXPECT_TRUE(after.ok()) << after.status_text() << ": " << after.output;
  // The children that made those answers give up on them soon, not after that hour.
  deadline = Clock::now() + std::chrono::seconds(60);
  while (!server_children(socket()).empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(server_children(socket()).size(), 0u) << "children wait on the stopped clients";
  for (pid_t pid : stopped) ::kill(pid, SIGCONT);
  for (std::thread& client : clients) client.join();
  for (const RunResult& result : results) {
    EXPECT_TRUE(result.ok()) << "a client that was stopped still gets its cubin: "
                             << result.status_text() << ": " << result.output;
  }
}

TEST_F(NvrtcServerFaults, ARequestOverTheLimitIsRefusedSayingSo) {
  ASSERT_TRUE(compile(kSmallKernel, std::chrono::seconds(120)).ok());  // the server runs
  UniqueFd fd = connect_to(socket());
  ASSERT_TRUE(fd);
  const unsigned char head[4] = {0, 0, 0x40, 0x06};  // 100 MiB follow, says the length
  ASSERT_EQ(::write(fd.get(), head, sizeof head), 4);
  std::string answer = read_until_closed(fd.get(), std::chrono::seconds(20));
  ASSERT_GT(answer.size(), 4u) << "no answer";
  nlohmann::json refused = nlohmann::json::from_cbor(answer.substr(4), true, false);
  ASSERT_TRUE(refused.contains("refused")) << refused.dump();
  EXPECT_EQ(refused["refused"],
            "the request is 104857600 bytes, over kiln's compile server's limit of 64 MiB");
}

}  // namespace
}  // namespace kiln::cuda
