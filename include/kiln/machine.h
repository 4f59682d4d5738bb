// What this machine offers a build: its cores, the memory available now, and the parallel job
// count that fits both (the TVM build guide's rule). Used by `kiln build` for its default -j and
// by `kiln doctor` to explain it.
//
//   int jobs = kiln::recommended_jobs_here();   // e.g. 2 on a 2-core, 24 GiB machine
//   kiln::recommended_jobs(64, 30ULL << 30);    // 10: one job per 3 GiB
#pragma once

namespace kiln {

inline constexpr unsigned long long kGiB = 1ULL << 30;

// MemAvailable from /proc/meminfo in bytes; 0 when it cannot be read.
unsigned long long available_memory();

// The cores this process may use (at least 1).
unsigned available_cores();

// The -j the guide recommends: max(1, min(cores, available memory / 3 GiB)).
int recommended_jobs(unsigned cores, unsigned long long available_bytes);

// The same for this machine: available_cores() and available_memory() now.
int recommended_jobs_here();

}  // namespace kiln
