#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <fcntl.h>

#include <gtest/gtest.h>

#include "frame.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "kiln_build_info.h"
#include "protocol.h"
#include "testing/test_support.h"

namespace kiln::pool {
namespace {

using namespace std::chrono_literals;

int g_initialized = 0;  // in a worker: how often the initializer ran in this process

KILN_TASK(square, [](const Value& x) -> Value { return x.get<int>() * x.get<int>(); });
KILN_TASK(echo, [](const Value& x) -> Value { return x; });
KILN_TASK(pid, [](const Value&) -> Value { return ::getpid(); });
KILN_TASK(sleep_ms, [](const Value& ms) -> Value {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms.get<int>()));
  return "slept";
});
KILN_TASK(crash, [](const Value&) -> Value {
  ::kill(::getpid(), SIGKILL);
  return nullptr;
});
KILN_TASK(exit_3, [](const Value&) -> Value { std::_Exit(3); });
KILN_TASK(fail, [](const Value& message) -> Value {
  throw std::out_of_range(message.get<std::string>());
});
// A real tool that fails (ls of a missing file, exit code 2), its failure given a source as a
// CUDA compile's is.
KILN_TASK(tool_fails, [](const Value& path) -> Value {
  try {
    check("Listing error:", {.argv = {"ls", path.get<std::string>()}});
  } catch (const ToolFailed& e) {
    ToolFailure failure = e.failure();
    failure.source = "int x = ;";
    failure.source_path = "k.cu";
    throw ToolFailed(std::move(failure));
  }
  return nullptr;
});
KILN_TASK(init_counter, [](const Value& start) -> Value {
  g_initialized += start.get<int>();
  return nullptr;
});
KILN_TASK(read_counter, [](const Value&) -> Value { return g_initialized; });
KILN_TASK(init_fails, [](const Value&) -> Value { throw std::runtime_error("no licence server"); });
KILN_TASK(rss_kib, [](const Value&) -> Value {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  }
  return -1;
});
KILN_TASK(chatty, [](const Value& x) -> Value {
  std::printf("\x01\x02garbage on stdout\n");
  (void)std::fflush(stdout);
  (void)std::fprintf(stderr, "more garbage on stderr\n");
  return x;
});
KILN_TASK(spin_blocking_sigterm, [](const Value&) -> Value {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);
  std::atomic<unsigned long> spins{0};
  for (;;) spins.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
});
KILN_TASK(sleeping_grandchild, [](const Value&) -> Value {
  std::vector<std::string> args = testing::child_argv("sleep", {"60000"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t grandchild = 0;
  posix_spawn(&grandchild, args[0].c_str(), nullptr, nullptr, argv.data(), nullptr);
  (void)std::fprintf(stderr, "grandchild %d\n", grandchild);
  FILE* f = std::fopen(std::getenv("KILN_TEST_GRANDCHILD_FILE"), "w");
  if (f != nullptr) {
    (void)std::fprintf(f, "%d", grandchild);
    (void)std::fclose(f);
  }
  std::this_thread::sleep_for(60s);
  return nullptr;
});
KILN_TASK(garbage_frame, [](const Value&) -> Value {
  const char junk[] = "\x05\x00\x00\x00\xff\xff\xff\xff\xff";
  [[maybe_unused]] ssize_t n = ::write(internal::kResponseFd, junk, sizeof junk - 1);
  std::this_thread::sleep_for(10s);
  return nullptr;
});
KILN_TASK(oversize_frame, [](const Value&) -> Value {
  const char header[] = "\xff\xff\xff\x7f";
  [[maybe_unused]] ssize_t n = ::write(internal::kResponseFd, header, 4);
  std::this_thread::sleep_for(10s);
  return nullptr;
});

TEST(Worker, HeaderExample) {
  Worker worker;
  EXPECT_EQ(worker.call("square", 3, 2s), 9);
}

// The seed's test: a timeout, then a crash, then normal results, all on one Worker.
TEST(Worker, TimeoutThenCrashThenNormalResults) {
  Worker worker;
  EXPECT_THROW(worker.call("sleep_ms", 5000, 100ms), TimeoutError);
  try {
    worker.call("crash", nullptr, 5s);
    FAIL() << "expected ChildProcessError";
  } catch (const ChildProcessError& e) {
    EXPECT_NE(std::string(e.what()).find("killed by signal SIGKILL"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(worker.call("square", 7, 5s), 49);
  EXPECT_EQ(worker.call("echo", "text", 5s), "text");
  try {
    worker.call("exit_3", nullptr, 5s);
    FAIL();
  } catch (const ChildProcessError& e) {
    EXPECT_NE(std::string(e.what()).find("exited with code 3"), std::string::npos) << e.what();
  }
}

// A RunScope on the calling thread caps the call and can cancel it (kiln build's Ctrl-C).
TEST(Worker, RunScopeDeadlineAndCancel) {
  Worker worker;
  EXPECT_EQ(worker.call("square", 2, 5s), 4);  // started and warm
  {
    RunScope scope({.deadline = std::chrono::steady_clock::now() + 200ms});
    auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(worker.call("sleep_ms", 30000), TimeoutError);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  }
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  std::thread canceller([w = fds[1]] {
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(::write(w, "x", 1), 1);
  });
  {
    RunScope scope({.cancel_fd = fds[0]});
    EXPECT_THROW(worker.call("sleep_ms", 30000, 60s), Cancelled);
  }
  canceller.join();
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(worker.call("square", 5, 5s), 25) << "a fresh worker after the cancelled one";
}

TEST(Worker, SamePidAcrossUsesWithoutMaxUses) {
  Worker worker;
  Value first = worker.call("pid", nullptr);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(worker.call("pid", nullptr), first);
  EXPECT_EQ(worker.pid(), first.get<pid_t>());
  EXPECT_NE(first.get<pid_t>(), ::getpid());
}

TEST(Worker, MaxUsesRecyclesTheProcess) {
  Worker worker({.max_uses = 2});
  pid_t a = worker.call("pid", nullptr).get<pid_t>();
  EXPECT_EQ(worker.call("pid", nullptr).get<pid_t>(), a);
  pid_t c = worker.call("pid", nullptr).get<pid_t>();
  EXPECT_NE(c, a) << "the third task runs in a new process";
  EXPECT_TRUE(testing::process_gone(a)) << "the old worker no longer exists";
}

TEST(Worker, InitializerRunsAtEveryStartAndIsNotAUse) {
  Worker worker({.initializer = "init_counter", .initializer_args = 5, .max_uses = 2});
  EXPECT_EQ(worker.call("read_counter", nullptr), 5) << "the initializer's state is visible";
  EXPECT_EQ(worker.call("read_counter", nullptr), 5) << "it ran once, and was not counted as a use";
  EXPECT_EQ(worker.call("read_counter", nullptr), 5) << "recycled: a fresh process ran it again";
}

TEST(Worker, AFailingInitializerFailsTheCallWithItsError) {
  Worker worker({.initializer = "init_fails"});
  for (int attempt = 0; attempt < 2; ++attempt) {  // and again on the restart
    try {
      worker.call("square", 2, 5s);
      FAIL() << "expected the initializer's TaskError";
    } catch (const TaskError& e) {
      EXPECT_EQ(e.type_name(), "std::runtime_error");
      EXPECT_EQ(e.message(), "no licence server");
    }
    EXPECT_EQ(worker.pid(), 0) << "the worker whose initializer failed is stopped";
  }
}

TEST(Worker, OneCallInFlightAtATime) {
  Worker worker;
  EXPECT_THROW(worker.recv(), InvalidState);
  worker.send("square", 4);
  EXPECT_THROW(worker.send("square", 5), InvalidState);
  EXPECT_EQ(worker.recv(), 16);
}

TEST(Worker, LargeValuesBothWaysAndMemoryIsGivenBackWhenIdle) {
  Worker worker;
  long before_kib = worker.call("rss_kib", nullptr, 10s).get<long>();
  std::string text(size_t{6} << 20, 'k');
  for (size_t i = 0; i < text.size(); i += 4096) text[i] = static_cast<char>('a' + i % 26);
  std::vector<std::uint8_t> bytes(size_t{12} << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 7);
  Value big = {{"text", text}, {"bytes", Value::binary(bytes)}, {"n", 1}};
  Value echoed = worker.call("echo", big, 60s);
  EXPECT_TRUE(echoed == big);
  if (std::string_view(KILN_SANITIZE).size() > 0) {
    GTEST_SKIP() << "the sanitizer's allocator keeps freed memory on purpose";
  }
  // The worker kept its buffers (18 MiB and more) while busy; idle, it gives them back.
  long idle_kib = 0;
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(60ms);
    idle_kib = worker.call("rss_kib", nullptr, 10s).get<long>();
    if (idle_kib <= before_kib + 4L * 1024) break;
  }
  EXPECT_LE(idle_kib, before_kib + 4L * 1024)
      << "RSS before " << before_kib << " KiB, idle after 18 MiB each way " << idle_kib << " KiB";
}

TEST(Worker, TaskExceptionsCarryTypeAndMessage) {
  Worker worker;
  try {
    worker.call("fail", "index 9 out of range");
    FAIL();
  } catch (const TaskError& e) {
    EXPECT_EQ(e.type_name(), "std::out_of_range");
    EXPECT_STREQ(e.what(), "std::out_of_range: index 9 out of range");
  }
  try {
    worker.call("no_such_task", nullptr);
    FAIL();
  } catch (const TaskError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown task 'no_such_task'"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(worker.call("square", 4), 16) << "the worker survives its tasks' exceptions";
}

TEST(Worker, AToolFailedArrivesAsAToolFailedWithEveryField) {
  Worker worker;
  try {
    worker.call("tool_fails", "/kiln-no-such-file");
    FAIL() << "ls of a missing file succeeded";
  } catch (const ToolFailed& e) {
    EXPECT_EQ(e.label(), "Listing error:");
    EXPECT_NE(e.output().find("/kiln-no-such-file"), std::string::npos) << e.output();
    EXPECT_EQ(e.command_line(), "ls /kiln-no-such-file");
    EXPECT_EQ(e.ending(), Ending::exited(2));
    EXPECT_EQ(e.status(), "");
    EXPECT_EQ(e.source(), "int x = ;");
    EXPECT_EQ(e.source_path(), "k.cu");
    EXPECT_EQ(e.what(), seed_text(e.failure()));
  }
  EXPECT_EQ(worker.call("square", 3), 9) << "the worker survives";
}

TEST(Worker, TaskOutputCannotCorruptTheProtocol) {
  Worker inherit;
  EXPECT_EQ(inherit.call("chatty", 41), 41);
  Worker discard({.output = Output::discard});
  EXPECT_EQ(discard.call("chatty", 42), 42);
  TempDirectory dir;
  Worker to_file({.output = Output::file, .output_file = dir / "worker.log"});
  EXPECT_EQ(to_file.call("chatty", 43), 43);
  to_file.kill();
  std::string log = testing::read_file(dir / "worker.log");
  EXPECT_NE(log.find("garbage on stdout"), std::string::npos) << log;
  EXPECT_NE(log.find("more garbage on stderr"), std::string::npos) << log;
}

TEST(Worker, BinaryBytesRoundTrip) {
  Worker worker;
  std::vector<std::uint8_t> bytes(1 << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 31);
  Value result = worker.call("echo", Value::binary(bytes), 30s);
  ASSERT_TRUE(result.is_binary());
  const std::vector<std::uint8_t>& echoed = result.get_binary();
  EXPECT_TRUE(echoed == bytes);
}

TEST(Worker, ParentKillsASpinnerThatBlocksSigterm) {
  Worker worker;
  worker.call("square", 1);  // started: measure the task, not the spawn
  auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(worker.call("spin_blocking_sigterm", nullptr, 200ms), TimeoutError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 200ms + 100ms);
  EXPECT_EQ(worker.pid(), 0) << "the worker was killed";
  EXPECT_EQ(worker.call("square", 5), 25);
}

TEST(Worker, TimeoutLeavesNoGrandchildBehind) {
  TempDirectory dir;
  std::string file = (dir / "grandchild").string();
  ::setenv("KILN_TEST_GRANDCHILD_FILE", file.c_str(), 1);
  Worker worker;
  EXPECT_THROW(worker.call("sleeping_grandchild", nullptr, 1s), TimeoutError);
  ::unsetenv("KILN_TEST_GRANDCHILD_FILE");
  pid_t grandchild = 0;
  std::ifstream(file) >> grandchild;
  ASSERT_GT(grandchild, 0) << "the task never started its grandchild";
  EXPECT_TRUE(testing::wait_process_gone(grandchild, 1000)) << "the grandchild survived";
}

TEST(Worker, GarbageAndOversizeFramesKillTheWorkerAndThePoolGoesOn) {
  Worker worker;
  try {
    worker.call("garbage_frame", nullptr, 5s);
    FAIL() << "expected ProtocolError";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid CBOR"), std::string::npos) << e.what();
  }
  EXPECT_EQ(worker.pid(), 0);
  EXPECT_EQ(worker.call("square", 6), 36);
  try {
    worker.call("oversize_frame", nullptr, 5s);
    FAIL() << "expected ProtocolError";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("over the limit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(worker.call("square", 8), 64);
}

TEST(Worker, KillIsAliveAndJoin) {
  Worker worker;
  EXPECT_FALSE(worker.is_alive()) << "started lazily";
  worker.call("square", 2);
  EXPECT_TRUE(worker.is_alive());
  pid_t pid = worker.pid();
  EXPECT_FALSE(worker.join(50ms)) << "an idle worker keeps running";
  worker.kill();
  EXPECT_FALSE(worker.is_alive());
  EXPECT_TRUE(testing::process_gone(pid));
  EXPECT_TRUE(worker.join(50ms));
  EXPECT_THROW(worker.recv(), InvalidState);
}

// The parent SIGKILLed: its worker must not outlive it by more than a second.
TEST(Worker, WorkerDiesWithItsParent) {
  TempDirectory dir;
  std::string ready = (dir / "worker-pid").string();
  std::optional<RunResult> parent;
  std::thread runner(
      [&] { parent = run({.argv = testing::child_argv("pool-parent", {ready}), .timeout = 60s}); });
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!std::filesystem::exists(ready) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  pid_t worker = 0;
  std::ifstream(ready) >> worker;
  ASSERT_GT(worker, 0);
  pid_t parent_pid = 0;
  for (pid_t pid : testing::child_pids()) {
    if (testing::read_file("/proc/" + std::to_string(pid) + "/cmdline").find("pool-parent") !=
        std::string::npos) {
      parent_pid = pid;
    }
  }
  ASSERT_GT(parent_pid, 0);
  ::kill(parent_pid, SIGKILL);
  runner.join();
  EXPECT_TRUE(testing::wait_process_gone(worker, 1000)) << "the worker outlived its parent";
}

}  // namespace
}  // namespace kiln::pool
