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
// - Each run's processes: a cgroup v2 child `fairgpu-<node>-<pid>-lease-<id>`
//   of the runs' parent (--cgroup, else the agent's own cgroup), made for
//   every run where the agent can make one, with or without controllers
//   (issue 30, M1): a job's child that left its session (setsid, a double
//   fork) is still in it, so the run's end kills them all with cgroup.kill
//   (Linux 5.14; before it, SIGKILL to each pid of cgroup.procs until none
//   is left), and an agent that starts after a kill -9 kills what its
//   predecessor's runs left the same way.
// - Memory: memory.max = the grant in the run's cgroup; when the memory
//   controller is not enabled for children there,
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
// - Processes (issue 30, "no pids limit"): pids.max = --max-pids in the
//   run's cgroup, the pids controller enabled as memory's is; a fork bomb
//   fails its forks there instead of taking the node's pids from others.
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

// Where the cgroup v2 hierarchy is mounted (the first cgroup2 line of
// /proc/self/mountinfo); "" when it is not.
std::string cgroup2_mount();
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

// What a run's cgroup holds it to; 0: no such limit.
struct RunLimits {
  std::uint64_t memory_bytes = 0;  // memory.max
  std::uint64_t max_pids = 0;      // pids.max
};

// A child cgroup holding one run.
struct RunCgroup {
  std::string dir;             // the child's directory; "" when none was made
  std::string problem;         // why none was made ("" when dir is set)
  std::string memory_problem;  // why memory.max is not set ("" = set, or not asked)
  std::string pids_problem;    // why pids.max is not set ("" = set, or not asked)
};
// Makes <parent>/<name> (a cgroup v2 directory: one with cgroup.procs) and
// sets the limits it can (see above); a run's cgroup is kept without them.
RunCgroup make_run_cgroup(const std::string& parent, const std::string& name,
                          const RunLimits& limits);
// "fairgpu-<node>-<agent_pid>-lease-<lease>".
std::string run_cgroup_name(const std::string& node, pid_t agent_pid, std::int64_t lease);
// The agent pid in the name of one of `node`'s run cgroups; 0 for any other
// name (another node's, even one whose name starts with this one's and a
// '-', or the agents' leaves).
pid_t run_cgroup_agent(const std::string& name, const std::string& node);
// SIGKILLs every process in cgroup `dir`: "1" to its cgroup.kill, where the
// kernel has it (Linux 5.14), else kill() for each pid in cgroup.procs (a
// process forking meanwhile may leave a new one: call again until
// cgroup_populated says it is empty). "" or why not.
std::string kill_cgroup(const std::string& dir);
// Whether any process is in cgroup `dir` (`populated 1` in cgroup.events, or
// where there is no such file a pid in cgroup.procs); a zombie is no longer
// in it. False once the directory is gone.
bool cgroup_populated(const std::string& dir);
// Removes a run's cgroup once its processes are gone; false while it still
// holds some (a dying process), to be retried.
bool remove_cgroup(const std::string& dir);

}  // namespace fairgpu::live
