// What the lease manager asks of whatever runs its jobs (docs/executors.md,
// DESIGN §7): fairgpu's own agents or Slurm. The lease manager decides
// (plans, leases, fencing, the store); an executor carries out its
// decisions and reports what happened, never deciding anything itself.
//
// Contract an implementation keeps:
// - apply() is called only with decisions already durable in the store;
// - kEnded is reported once per run, and only when the run's processes are
//   gone (a lease on the same job or devices waits for it: no job runs
//   twice, no device is shared);
// - renewals are no call at all.
// Not thread-safe: the lease manager calls it from its scheduling thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fairgpu::live {

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
  std::vector<std::string> argv;
  std::string shell_command;  // when argv is empty
  std::vector<std::pair<std::string, std::string>> env;
  int nodes = 1;
  int gpus_per_node = 1;
  std::string checkpoint_dir;
  std::string progress_file;
  std::string log_path;
};

struct Placement {
  std::string node;
  std::vector<int> devices;
};

// One run to start: a lease of a job on devices of one or more nodes.
struct RunStart {
  std::int64_t lease = 0;
  std::string job;
  std::string gpu_type;
  std::vector<Placement> placement;
};

struct RunEvent {
  enum class Kind { kRunning, kProgress, kEnded };
  Kind kind = Kind::kRunning;
  std::int64_t lease = 0;
  std::string job;
  std::vector<std::string> nodes;  // kRunning
  std::int64_t iterations = 0;     // kProgress: total iterations done
  int exit_code = 0;               // kEnded; -1 when unknown (lost, never started)
  int signal = 0;                  // kEnded
  bool revoked = false;            // kEnded: it ended because it was revoked
  std::string detail;              // kEnded: why, in a few words
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
};

}  // namespace fairgpu::live
