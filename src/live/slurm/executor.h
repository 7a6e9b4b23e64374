// The Slurm executor (docs/executors.md, specs/slurm.md): fairgpu's leases
// carried out on an existing Slurm cluster through a SlurmClient. Not wired
// into `fairgpu serve` yet (that waits for the lease manager split).
//
// A job is one Slurm job for its whole life, held whenever it has no lease:
//   admit    → sbatch --hold --requeue (untyped GPUs; the pin picks the type)
//   start    → run file written, pin (NodeList=... StartTime=now), release
//   revoke   → scancel --signal=USR1 --full now, requeuehold after grace_s;
//              kEnded(revoked) once Slurm shows it pending and held again
//   finished → kEnded with Slurm's exit code (COMPLETED, FAILED, ...)
//   node failure → Slurm requeues the job unheld, still pinned to the dead
//              node, while (slurmd killed -9) its processes may still run:
//              the executor holds it at once and reports kEnded only when
//              the node responds again (its slurmd kills what was left) or
//              leaves the configuration, never on a timer.
// One round's writes (due requeueholds, holds, pins, releases) go through
// one scontrol; each poll reads one squeue plus one scontrol show job (and
// the nodes only while a job waits on a failed node).
//
// Devices: Slurm picks the GPU indices on the pinned node itself; the plan's
// device ids count GPUs per node. nodes() leaves out GPUs held by jobs that
// are not fairgpu's, nodes that are drained, down or not responding, nodes
// outside the partition and nodes with several GPU types.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "live/executor.h"
#include "live/process.h"
#include "live/slurm/client.h"

namespace fairgpu::live::slurm {

struct SlurmExecutorOptions {
  std::string partition;  // "" = every partition
  double grace_s = 10;    // between the checkpoint signal and requeuehold
};

class SlurmExecutor : public Executor {
 public:
  SlurmExecutor(SlurmClient& client, SlurmExecutorOptions options);

  std::vector<ExecutorNode> nodes() override;
  std::string admit(const ExecutorJob& job) override;
  void adopt(const ExecutorJob& job, const std::string& handle, std::int64_t active_lease) override;
  void apply(const std::vector<RunStart>& starts, const std::vector<std::int64_t>& revokes,
             double now) override;
  void cancel(const std::string& job) override;
  std::vector<RunEvent> poll(double now) override;

  // The Slurm job id of a fairgpu job (0 when unknown).
  std::int64_t slurm_id(const std::string& job) const;

 private:
  enum class Phase {
    kAdopted,   // after a restart, until the first poll
    kIdle,      // pending and held, no lease
    kStarting,  // pinned and released for `lease`
    kRunning,   // RUNNING under `lease`
    kRevoking,  // signalled; requeuehold at requeue_at
    kRequeued,  // requeuehold sent; waiting for pending + held
    kFenced,    // requeued by a node failure; waiting for the node to respond
    kDone,      // finished or cancelled; nothing more to report
  };
  struct Tracked {
    ExecutorJob spec;
    std::int64_t slurm_id = 0;
    std::int64_t lease = 0;
    Phase phase = Phase::kIdle;
    double requeue_at = 0;
    std::vector<std::string> nodes;  // where the current run was seen
    std::optional<ProgressFile> progress;
    std::int64_t reported_iterations = -1;
    int exit_code = -1, signal = 0;  // the run's, when Slurm showed them
    bool cancelled = false;
    std::string start_refused;  // why Slurm refused the current start
  };

  Tracked* by_lease(std::int64_t lease);
  void ended(Tracked& t, std::vector<RunEvent>& events, bool revoked, const std::string& detail);
  void flush(RoundWrites& writes, std::vector<RunEvent>& events);

  SlurmClient& client_;
  SlurmExecutorOptions options_;
  std::map<std::string, Tracked> jobs_;
  std::map<std::int64_t, std::string> job_of_slurm_id_;
  std::vector<RunEvent> carried_;  // events found outside poll (refused starts)
};

}  // namespace fairgpu::live::slurm
