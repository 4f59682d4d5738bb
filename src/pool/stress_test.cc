// The pool under load: 100 000 tasks (10 000 under sanitizers) with 1% crashes and 1% timeouts on
// 8 workers. Every result is accounted for, and descriptors, children and memory stay flat.
#include <gtest/gtest.h>

#include <malloc.h>
#include <signal.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln_build_info.h"
#include "testing/test_support.h"

namespace kiln::pool {
namespace {

using namespace std::chrono_literals;

enum class Kind { normal, crash, hang };

KILN_TASK(stress, [](const Value& job) -> Value {
  auto kind = job.at("kind").get<Kind>();
  if (kind == Kind::crash) ::kill(::getpid(), SIGKILL);
  if (kind == Kind::hang) ::sleep(10);
  return job.at("i");
});

// malloc's bytes in use, over every arena and mmapped chunk: what a leak leaves behind, whatever
// high-water mark VmRSS keeps of the batches in flight.
long heap_in_use_kib() {
  struct mallinfo2 info = ::mallinfo2();
  return static_cast<long>((info.uordblks + info.hblkhd) / 1024);
}

long rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  }
  return -1;
}

Kind kind_of(int i) {
  if (i % 100 == 37) return Kind::crash;
  if (i % 100 == 73) return Kind::hang;
  return Kind::normal;
}

TEST(PoolStress, EveryResultAccountedForAndResourcesFlat) {
  const bool sanitized = std::string_view(KILN_SANITIZE).size() > 0;
  const int total = sanitized ? 10'000 : 100'000;
  const int batch = total / 10;
  // Sanitized workers are several times slower; the timeout only has to separate trivial tasks
  // from ten-second ones.
  Executor pool(
      {.workers = 8, .timeout = sanitized ? 1000ms : 100ms, .worker = {.output = Output::discard}});
  // Each live worker holds three descriptors here (request pipe, response pipe, pidfd); what
  // is left once those are counted out must not grow.
  // A worker killed for a timeout holds one descriptor (its pidfd) until it is reaped, a moment
  // after the call ended: the count is taken once two readings 20 ms apart agree.
  auto count_fds = [] { return testing::open_fds().size() - 3 * testing::child_pids().size(); };
  auto baseline_fds = [&count_fds] {
    size_t last = count_fds();
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(20ms);
      size_t now = count_fds();
      if (now == last) break;
      last = now;
    }
    return last;
  };
  size_t fds_after_first = 0;
  long rss_after_first = 0;
  long heap_after_first = 0;
  int complete = 0, crashed = 0, timed_out = 0;
  for (int start = 0; start < total; start += batch) {
    if (start == batch) {  // the first batch's jobs and results are freed by now
      rss_after_first = rss_kib();
      heap_after_first = heap_in_use_kib();
    }
    std::vector<Value> jobs;
    for (int i = start; i < start + batch; ++i) jobs.push_back({{"i", i}, {"kind", kind_of(i)}});
    std::vector<MapResult> results = pool.map_with_error_catching("stress", jobs);
    ASSERT_EQ(results.size(), static_cast<size_t>(batch));
    for (int k = 0; k < batch; ++k) {
      int i = start + k;
      const MapResult& r = results[k];
      switch (kind_of(i)) {
        case Kind::normal:
          ASSERT_EQ(r.status, StatusKind::COMPLETE) << "task " << i << ": " << r.value;
          ASSERT_EQ(r.value, i);
          ++complete;
          break;
        case Kind::crash:
          ASSERT_EQ(r.status, StatusKind::EXCEPTION) << "task " << i;
          ASSERT_NE(r.value.get<std::string>().find("killed by signal SIGKILL"), std::string::npos);
          ++crashed;
          break;
        case Kind::hang:
          ASSERT_EQ(r.status, StatusKind::TIMEOUT) << "task " << i << ": " << r.value;
          ++timed_out;
          break;
      }
    }
    // A worker killed for a timeout is reaped as soon as it has died, which may be a moment
    // after its call was reported.
    std::vector<pid_t> children = testing::child_pids();
    auto reap_deadline = std::chrono::steady_clock::now() + 2s;
    while (std::any_of(children.begin(), children.end(), testing::process_gone) &&
           std::chrono::steady_clock::now() < reap_deadline) {
      std::this_thread::sleep_for(1ms);
      children = testing::child_pids();
    }
    EXPECT_LE(children.size(), 8u) << "after task " << start + batch;
    for (pid_t child : children) EXPECT_FALSE(testing::process_gone(child)) << "zombie " << child;
    if (start == 0) {
      fds_after_first = baseline_fds();
    }
  }
  EXPECT_EQ(complete, total - 2 * (total / 100));
  EXPECT_EQ(crashed, total / 100);
  EXPECT_EQ(timed_out, total / 100);
  EXPECT_EQ(baseline_fds(), fds_after_first) << "descriptors leaked";
  // Sanitizer runtimes have their own allocator (and hold freed memory in quarantine), so neither
  // figure says anything there; their leak checker covers that case instead. 90,000 calls after
  // the first batch: 256 KiB is under 3 bytes a call. VmRSS, only loosely bounded, keeps the
  // high-water mark of a batch in flight.
  if (!sanitized) {
    long heap = heap_in_use_kib(), rss = rss_kib();
    std::printf("malloc'd %ld KiB -> %ld KiB; VmRSS %ld KiB -> %ld KiB\n", heap_after_first, heap,
                rss_after_first, rss);
    EXPECT_LT(heap - heap_after_first, 256) << "malloc'd bytes in use grew";
    EXPECT_LT(rss - rss_after_first, 32 * 1024) << "parent RSS grew";
  }
}

}  // namespace
}  // namespace kiln::pool
