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
// - Memory: a cgroup v2 child `fairgpu-<node>-<pid>-lease-<id>` of the
//   runs' parent (--cgroup, else the agent's own cgroup) with memory.max =
//   the grant; when the memory controller is not enabled for children there,
//   the agent enables it (+memory in cgroup.subtree_control), which the
//   kernel allows only where the parent holds no process of its own (cgroup
//   v2's no-internal-processes rule; the root is exempt). So an agent in the
//   parent first moves itself into a leaf `fairgpu-agent@<node>` of it and
//   the runs go beside that leaf, as systemd and kubelet do (issue 30). It
//   moves only itself: where other programs' processes stay in the parent
//   (the shell that started it, in a container) the controller cannot be
//   enabled, the agent says so once naming them, and each job runs without
//   a limit, its status saying why ("memory limit not enforced: ..."); the
//   job is never failed for it.
#pragma once

#include <sys/types.h>

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

// Where the runs' cgroups go, and whether the agent must first leave that
// cgroup for a leaf of it (see above).
struct CgroupPlan {
  std::string runs_parent;  // "" = no memory limits
  std::string agent_leaf;   // the agent moves there first; "" = it stays put
};
// `configured`: --cgroup ("" = the agent's own cgroup `own`, "none");
// `own_is_root`: `own` is the hierarchy's root (exempt from the rule). An
// agent whose own cgroup already is its leaf puts runs beside it.
CgroupPlan plan_cgroups(const std::string& configured, const std::string& own, bool own_is_root,
                        const std::string& node);
// "fairgpu-agent@<node>": no run cgroup's name starts with it.
std::string agent_leaf_name(const std::string& node);
// Whether `dir` is a cgroup v2 hierarchy's root (the one cgroup without a
// cgroup.type file).
bool is_root_cgroup(const std::string& dir);
// Makes `dir` if needed and moves process `pid` (all its threads) into it;
// "" or why not.
std::string move_into_cgroup(const std::string& dir, pid_t pid);
// Enables `controller` for the children of `parent` (+controller in its
// cgroup.subtree_control) unless it already is; "" or why not (for EBUSY,
// the processes that are in the way).
std::string enable_child_controller(const std::string& parent, const std::string& controller);

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
