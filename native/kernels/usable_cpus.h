// How many CPUs this process may use: the CPUs of its affinity mask
// (sched_getaffinity, which taskset and Kubernetes' static CPU manager set),
// capped by the CPU quota of its cgroup and every cgroup above it (cgroup v2
// cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us, rounded up: a limit of
// 1.5 CPUs gives 2). A container limited to 2 CPUs on a 64-core node gets 2,
// not 64 (docs/design.md, 'Threads').
#pragma once

#include <string>

namespace pjrt_score {

struct UsableCpus {
  int affinity = 1;    // CPUs in the affinity mask
  int quota = 0;       // CPUs the cgroup quota allows, rounded up; 0 where there is no quota
  int usable = 1;      // min(affinity, quota where set), at least 1
  std::string source;  // "affinity" or "cgroup quota (<file>)": what set `usable`
};

// Read now (the mask and the quota can change while the process runs).
UsableCpus ReadUsableCpus();

}  // namespace pjrt_score
