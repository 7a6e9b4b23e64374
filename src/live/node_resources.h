// What the agent reads of its machine's CPUs and memory, and how it holds a
// job to the CPUs and memory a launch grants (issue 15 item 4, Synergy in the
// live manager; docs/live-protocol.md "launch").
//
// Choices:
// - The cores a node offers are the agent's own affinity mask
//   (sched_getaffinity), so an agent started under `taskset` or in a cpuset
//   offers only those; `--cpus` may declare another count, then jobs are
//   pinned within the mask all the same (cores shared when it is smaller).
// - A run granted c CPUs gets max(1, round(c)) cores, capped at the mask:
//   those fewest other runs of the agent are pinned to (lowest id on ties),
//   so runs get distinct cores while there are enough. OMP_NUM_THREADS is
//   that count.
// - Memory: a cgroup v2 child `fairgpu-lease-<id>` of the agent's cgroup
//   directory with memory.max = the grant; when the memory controller is not
//   enabled for children there, the agent enables it (+memory in
//   cgroup.subtree_control), which the kernel allows only where the directory
//   holds no process of its own (a delegated cgroup, or the root). Where
//   that cannot be done the job runs without a limit, and its status says
//   why ("memory limit not enforced: ..."); the job is never failed for it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fairgpu::live {

// The CPUs the calling process may run on (sched_getaffinity), ascending.
std::vector<int> affinity_cpus();
// MemTotal of /proc/meminfo in GB (2^30 bytes); sysconf's physical pages
// when that cannot be read.
double total_memory_gb();

// "0-3,6,8-9".
std::string cpu_list_text(const std::vector<int>& cpus);
// Parses Cpus_allowed_list syntax ("0-3,6"; ids below 1024, what
// sched_setaffinity's cpu_set_t holds); throws InputError naming --cpu-list.
std::vector<int> parse_cpu_list(const std::string& text);

// The cores for a run granted `granted` CPUs (see above), ascending.
// `pinned` counts how many running jobs each core is pinned to.
std::vector<int> pick_cores(const std::vector<int>& cores, const std::map<int, int>& pinned,
                            double granted);

// The cgroup v2 directory of the calling process (the cgroup2 mount of
// /proc/self/mountinfo joined with the "0::" line of /proc/self/cgroup);
// "" when there is no cgroup v2 hierarchy.
std::string own_cgroup_dir();

// A child cgroup holding one run under a memory limit.
struct MemoryCgroup {
  std::string dir;      // the child's directory; "" when none was made
  std::string problem;  // why not ("" when dir is set)
};
// Makes <parent>/<name> with memory.max = bytes (see above).
MemoryCgroup make_memory_cgroup(const std::string& parent, const std::string& name,
                                std::uint64_t bytes);
// Removes a run's cgroup once its processes are gone; false while it still
// holds some (a dying process), to be retried.
bool remove_cgroup(const std::string& dir);

}  // namespace fairgpu::live
