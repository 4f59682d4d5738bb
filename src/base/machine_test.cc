#include "kiln/machine.h"

#include <gtest/gtest.h>

#include <thread>

namespace kiln {
namespace {

TEST(Machine, RecommendedJobsFollowTheGuide) {
  EXPECT_EQ(recommended_jobs(64, 488 * kGiB), 64);  // the guide's machine: memory allows 162
  EXPECT_EQ(recommended_jobs(64, 30 * kGiB), 10);
  EXPECT_EQ(recommended_jobs(8, 2 * kGiB), 1) << "never below one";
}

TEST(Machine, ThisMachine) {
  EXPECT_GT(available_memory(), 0U) << "/proc/meminfo has MemAvailable on Linux";
  EXPECT_EQ(available_cores(), std::max(1U, std::thread::hardware_concurrency()));
  EXPECT_EQ(recommended_jobs_here(), recommended_jobs(available_cores(), available_memory()));
}

}  // namespace
}  // namespace kiln
