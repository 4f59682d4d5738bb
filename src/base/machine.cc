#include "kiln/machine.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>

namespace kiln {

unsigned long long available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.starts_with("MemAvailable:")) return std::stoull(line.substr(13)) * 1024;
  }
  return 0;
}

unsigned available_cores() { return std::max(1U, std::thread::hardware_concurrency()); }

int recommended_jobs(unsigned cores, unsigned long long available_bytes) {
  auto by_memory = static_cast<long long>(available_bytes / (3 * kGiB));
  return static_cast<int>(std::max<long long>(1, std::min<long long>(cores, by_memory)));
}

int recommended_jobs_here() { return recommended_jobs(available_cores(), available_memory()); }

}  // namespace kiln
