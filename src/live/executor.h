// What the lease manager asks of whatever runs its jobs (docs/executors.md,
// docs/design.md §7): fairgpu's own agents or Slurm. The lease manager decides
// (plans, leases, fencing, the store); an executor carries out its
// decisions and reports what happened, never deciding anything itself.
//
// Two styles of reporting, one set of events:
// - push (Slurm): the lease manager polls; poll() returns events;
// - pull (agents): the agents call in (heartbeats) and wait for an answer
//   that depends on the lease manager's verdict, so the executor hands each
//   event to LeaseHost at once, under the lease manager's lock.
//
// Contract an implementation keeps:
// - a start leaves the process only once its store ticket is durable
//   (RunStart::ticket; LeaseHost::wait), so decisions are committed first;
// - kEnded is reported once per run, and only when the run's processes are
//   gone (a lease on the same job or devices waits for it: no job runs
//   twice, no device is shared);
// - renewals are no call at all.
// Not thread-safe: the lease manager calls it under its own lock.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fairgpu::live {

// A gang's MASTER_PORT: kMasterPortBase + gang id mod kMasterPortSpan
// (29500..30499; 29500 is torch.distributed's default).
constexpr int kMasterPortBase = 29500;
constexpr int kMasterPortSpan = 1000;

// A node as the lease manager may plan it now.
struct ExecutorNode {
  std::string name;
  std::string gpu_type;
  std::vector<int> devices;  // device ids fairgpu may use (none held by others)
  int cpus = 0;
  std::int64_t memory_mb = 0;
};

// A job as submitted to fairgpu.
struct ExecutorJob {
  std::string job;  // fairgpu's job id
  std::string tenant;
  std::vector<std::string> argv;
  std::string shell_command;  // when argv is empty
  std::vector<std::pair<std::string, std::string>> env;
  int nodes = 1;
  int gpus_per_node = 1;
  std::string checkpoint_dir;
  std::string progress_file;
  std::string log_path;
  double iterations = 0;  // the job's total (0: unknown); a run whose progress reached it is done
  std::string run_as_user{};  // Slurm: the Unix user its Slurm job runs as ("": the submitter)
  std::string account{};      // Slurm: the account it is charged to ("": the user's default)
};

// One node's part of a run, in rank order.
struct Placement {
  std::string node;
  std::vector<int> devices;
  std::int64_t lease = 0;    // the part's own lease (0: the run's lease)
  std::string address{};     // where the node's processes are reached ("" = its name)
  std::uint64_t ticket = 0;  // store ticket the part's start waits for (0 = durable)
  // The CPUs and memory (GB) the plan grants this part on its node (0: none
  // declared); agents pin the job and limit its memory (docs/live-protocol.md).
  double cpus = 0.0;
  double memory_gb = 0.0;
};

// One run to start: a lease of a job on devices of one or more nodes.
struct RunStart {
  std::int64_t lease = 0;  // the run's (a gang's: rank 0's part lease)
  std::string job;
  std::string gpu_type;
  std::vector<Placement> placement;
  // What the run carries besides its placement (agents launch from it).
  ExecutorJob spec{};
  int tenant_slot = -1;     // -1: none assigned
  std::string unix_user{};  // "": the agent derives one from the slot
};

struct RunEvent {
  // kNodeLost: the node stopped answering; its runs will be gone (fenced)
  // by relaunch_at, when their jobs may run elsewhere.
  enum class Kind { kRunning, kProgress, kEnded, kNodeLost };
  Kind kind = Kind::kRunning;
  std::int64_t lease = 0;
  std::string job;
  std::vector<std::string> nodes;  // kRunning; kProgress, kEnded: the reporting node (agents)
  // kRunning (Slurm): the GPU indices Slurm gave the run, per node (empty
  // when Slurm did not say); the lease manager relabels the lease's devices
  // to them, since Slurm 22.05 cannot be asked for indices.
  std::vector<std::pair<std::string, std::vector<int>>> node_devices;
  double iterations = 0;           // kProgress, kEnded: total iterations done
  int exit_code = 0;               // kEnded; -1 when unknown (lost, never started)
  int signal = 0;                  // kEnded
  bool revoked = false;            // kEnded: it ended because it was revoked
  bool launch_failed = false;      // kEnded: it never ran (exec error)
  // kEnded with launch_failed: for the node's own reason (its disk full, a
  // cgroup it cannot make), counted against the node (node_fault_limit).
  bool node_fault = false;
  bool never_started = false;      // kEnded: revoked before it was started
  std::string detail;              // kEnded: why, in a few words (the log tail)
  std::int64_t batch_size = 0;     // kProgress: the batch size the job reports (0: none)
  std::string limits;              // kProgress: what the node holds the run to ("": unsaid)
  // kEnded (agents): why the node's report of this run was refused (a field
  // out of the protocol's bounds, now or while it ran): the end counts as a
  // failure, never as a clean exit or a revoke.
  std::string refused;
  std::string node;                // kNodeLost
  double relaunch_at = 0;          // kNodeLost
};

// The lease manager as a pull-style executor (agents) sees it: the executor
// takes lock(), reports each event as it arrives and answers its caller with
// the verdicts; then waits for the tickets it collected. Every call but
// lock() and wait() is made under the lock.
class LeaseHost {
 public:
  using Tickets = std::vector<std::uint64_t>;
  struct NodeUp {
    std::string name, gpu_type, address;
    std::vector<int> devices;
    double cpus = 0, memory_gb = 0;
  };
  // What the lease manager says of a run reported running.
  struct Verdict {
    bool keep = false;     // false: the run must stop (unknown, revoked, measured)
    std::string job;       // the lease's job ("" when the lease is unknown)
    double lease_end = 0;  // keep: when its lease ends
    bool wait = false;     // the answer waits until the tickets are durable
  };

  virtual ~LeaseHost() = default;
  virtual std::unique_lock<std::mutex> lock() = 0;
  virtual void wait(const Tickets& tickets) = 0;
  // A node (re)registered: whatever ran under its previous epoch is gone.
  // Returns its new epoch.
  virtual std::int64_t node_up(const NodeUp& node, Tickets& tickets) = 0;
  // A node's report under `epoch`: false when that epoch is stale (unknown
  // node, re-registered, lost).
  virtual bool node_heard(const std::string& node, std::int64_t epoch, double now) = 0;
  // kProgress (a run reported running) or kEnded.
  virtual Verdict report(const RunEvent& event, Tickets& tickets) = 0;
  // Leases being revoked on the node (the agent is told to stop them while
  // it reports them; one it no longer reports never ran or was acked).
  virtual std::vector<std::int64_t> revoking_on(const std::string& node) const = 0;
  // When the active lease on `node` ends; none when it is not active there.
  virtual std::optional<double> active_until(std::int64_t lease, const std::string& node) const = 0;
  // Pending leases whose devices the reports freed may start now (apply()).
  virtual void start_pending(Tickets& tickets) = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // The nodes plans may use now.
  virtual std::vector<ExecutorNode> nodes() = 0;
  // Once per job at submission; the handle is stored with the job.
  virtual std::string admit(const ExecutorJob& job) = 0;
  // After a restart: a stored job that is not finished, with its handle and
  // its active lease (0 when none). The next poll reconciles.
  virtual void adopt(const ExecutorJob& job, const std::string& handle,
                     std::int64_t active_lease) = 0;
  // A scheduling point's starts and revokes (lease ids), at time `now`.
  virtual void apply(const std::vector<RunStart>& starts, const std::vector<std::int64_t>& revokes,
                     double now) = 0;
  // Stops a job for good; its running lease, if any, ends in a later poll.
  virtual void cancel(const std::string& job) = 0;
  // What happened since the last call; sends what has become due (e.g. the
  // requeue after a revoke's grace period).
  virtual std::vector<RunEvent> poll(double now) = 0;
  // Whether a run must keep to one node (the plan then never spreads a gang;
  // Cluster::gangs_on_one_node).
  virtual bool gangs_on_one_node() const { return false; }
  // Whether a run over several nodes must take the same GPUs on each, of one
  // type (Cluster::gangs_spread_evenly).
  virtual bool gangs_spread_evenly() const { return false; }
};

}  // namespace fairgpu::live
