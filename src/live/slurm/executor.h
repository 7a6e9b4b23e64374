// The Slurm executor (docs/executors.md, specs/slurm.md): fairgpu's leases
// carried out on an existing Slurm cluster through a SlurmClient. Not wired
// into `fairgpu serve` yet (that waits for the lease manager split).
//
// A job is one Slurm job for its whole life, held whenever it has no lease:
//   admit    → sbatch --hold --requeue (untyped GPUs; the pin picks the type)
//   start    → run file written, pin (NodeList=... StartTime=now NumNodes=K-K
//              TresPerNode=gres:gpu:G: the run's shape), release
//   revoke   → scancel --signal=USR1 --full now, requeuehold after grace_s;
//              kEnded(revoked) once Slurm shows it pending and held again
//   finished → kEnded with Slurm's exit code (COMPLETED, FAILED, ...)
//   node failure → Slurm requeues the job unheld, still pinned to the dead
//              node, while (slurmd killed -9) its processes may still run:
//              the executor holds it at once and reports kEnded only when
//              the node responds again (or leaves the configuration) and no
//              process of the run holds its fence file (its slurmd has killed
//              what was left), never on a timer.
// One round's writes (due requeueholds, holds, pins, releases) go through
// one scontrol; each poll reads one squeue plus one scontrol show job (and
// the nodes only while a job waits on a failed node).
//
// Every write is redone from what Slurm shows: a round that failed part-way
// (slurmctld down or restarting, scontrol killed between the pins and the
// release) leaves the job's phase saying what was meant, and the next poll
// that reads Slurm sends again what is not done (a start still held: pin and
// release; a revoke still running: requeuehold; a cancel not yet final:
// scancel; an idle job released: requeuehold). An exchange that fails throws
// SlurmError; the executor's state stays valid for the next one.
//
// Strays: with an instance tag, each job is submitted with Comment=<tag>.
// A Slurm job carrying the tag, fairgpu's name (fairgpu-<job>) and one of
// its users (the submitter, a tenant's run-as user), not final and not
// tracked here is a stray: submitted by this fairgpu (same store) whose id
// never reached the store (a crash right after sbatch, or an sbatch that
// timed out but went through). admit() takes a stray of its job over
// instead of submitting again, only one whose Slurm user is the job's own
// run-as user (or the submitter): any tenant's run-as user can submit a job
// with the tag and the name (issue 30 H6); cancel_strays() scancels the
// others (no stored job owns them).
//
// Shape: a job is submitted with one GPU on one node; each start sets the
// run's shape with its pin (NumNodes=K TresPerNode=gres:gpu:G), so a gang
// the plan spreads over K nodes is one Slurm job over them, its ranks
// started by srun with the rendezvous variables (submit_script); a revoke,
// checkpoint signal or requeue acts on the whole job.
//
// Devices: Slurm picks the GPU indices on the pinned node itself; the plan's
// device ids count GPUs per node. nodes() leaves out GPUs held by jobs that
// are not fairgpu's, nodes that are drained, down or not responding, nodes
// outside the partition and nodes with several GPU types.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "live/executor.h"
#include "live/process.h"
#include "live/slurm/client.h"

namespace fairgpu::live::slurm {

struct SlurmExecutorOptions {
  std::string partition;  // "" = every partition
  double grace_s = 10;    // between the checkpoint signal and requeuehold
  std::string instance{};  // the Comment of this fairgpu's jobs ("" = no strays handled)
  // The users fairgpu's jobs belong to: the submitter and the tenants' run-as
  // users (strays: empty = any).
  std::set<std::string> users{};
  // The user fairgpu submits as (the run-as user of a job without one): a
  // stray is taken over only by a job that would run as its user ("": any).
  std::string submitter{};
};

// Whether every node of a run holds as many of its GPUs as the first
// (Slurm's --gres counts GPUs per node: a spread with unequal counts cannot
// be one Slurm job).
bool uniform_placement(const std::vector<Placement>& placement);

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
  // A run's shape (nodes, GPUs per node) is set at its pin: gangs spread
  // over nodes, with the same GPU count on each node (uniform_placement),
  // so the plan spreads them so.
  bool gangs_spread_evenly() const override { return true; }

  // The tag and users of SlurmExecutorOptions (known once the store is read).
  void set_identity(std::string instance, std::set<std::string> users, std::string submitter) {
    options_.instance = std::move(instance);
    options_.users = std::move(users);
    options_.submitter = std::move(submitter);
  }
  // `fairgpu drain`/`undrain` carried to Slurm (SlurmClient::set_node_drained).
  void set_node_drained(const std::string& node, bool drained) {
    client_.set_node_drained(node, drained);
  }
  // The Slurm job id of a fairgpu job (0 when unknown).
  std::int64_t slurm_id(const std::string& job) const;
  // Jobs that Slurm lost and that were submitted again since the last call,
  // with their new Slurm ids (to store, as an admit's).
  std::vector<std::pair<std::string, std::int64_t>> take_resubmitted() {
    return std::exchange(resubmitted_, {});
  }

  // Strays found by the last poll (fairgpu job -> Slurm ids, lowest first)
  // that no admit() took over since.
  const std::map<std::string, std::vector<std::int64_t>>& strays() const { return strays_; }
  // Cancels every stray left (call after the admits that follow a poll);
  // returns their Slurm ids. Throws SlurmError when scancel fails.
  std::vector<std::int64_t> cancel_strays();
  // Nodes that the last nodes() found in state UNKNOWN without
  // NOT_RESPONDING: registering after slurmctld restarted, neither offered
  // nor lost (their runs go on).
  const std::set<std::string>& settling_nodes() const { return settling_; }

 private:
  enum class Phase {
    kAdopted,   // after a restart, until the first poll
    kIdle,      // pending and held, no lease
    kStarting,  // pinned and released for `lease`
    kRunning,   // RUNNING under `lease`
    kRevoking,  // signalled; requeuehold at requeue_at, or once it has exited
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
    bool cancel_sent = false;   // scancel answered (redone while not final)
    RoundWrites::Pin pin;       // the current start's (redone while it is held)
    std::string start_refused;  // why Slurm refused the current start
    // Runs in a row that ended before the wrapper started the job's command
    // (refused for want of GPUs, kNoGpuExitCode; or failed by Slurm before
    // the wrapper's began mark): requeued as never started, up to
    // kMaxUnstartedRuns (the marks are the job's to write too; past that it
    // is the job's failure).
    int unstarted_runs = 0;
    std::string unstarted;   // why the current requeue is such a run ("" if not)
    std::string slurm_seen;  // the Slurm state last logged for it (log_slurm_state)
    // Slurm lost the job (slurmctld died before it saved it): its run is
    // reported ended and the job is submitted again (resubmit_lost).
    bool lost = false;
  };
  static constexpr int kMaxUnstartedRuns = 3;

  Tracked* by_lease(std::int64_t lease);
  // Starts tracking `job` as Slurm job `slurm_id`; returns the id as its handle.
  std::string track(const ExecutorJob& job, std::int64_t slurm_id, Phase phase);
  void ended(Tracked& t, std::vector<RunEvent>& events, bool revoked, const std::string& detail);
  void flush(RoundWrites& writes, std::vector<RunEvent>& events);
  // A revoked (or refused) run held again: its end reported, the job idle.
  void requeued_ended(Tracked& t, std::vector<RunEvent>& events);
  // One `slurm_run_state` log line when the Slurm state (job state, reason,
  // hold, nodes) of a run the executor waits on differs from the last one
  // logged for it, so that a run stuck starting or revoking can be diagnosed
  // from the log. `d` null: Slurm no longer knows the job.
  void log_slurm_state(Tracked& t, const JobDetail* d);
  SubmitSpec submit_spec(const ExecutorJob& job) const;
  // Submits every lost job again (held, idle), each on its own: one that
  // fails is tried again at the next poll.
  void resubmit_lost();

  struct Taken {  // a node's GPUs in use by jobs that are not fairgpu's
    std::set<int> indices;
    int without_index = 0;  // GRES in use that Slurm lists without indices
  };
  std::map<std::string, Taken> taken_before_;  // by node, at the last nodes()

  SlurmClient& client_;
  SlurmExecutorOptions options_;
  std::map<std::string, Tracked> jobs_;
  std::map<std::int64_t, std::string> job_of_slurm_id_;
  std::vector<RunEvent> carried_;  // events found outside poll (refused starts)
  std::map<std::string, std::vector<std::int64_t>> strays_;
  std::map<std::int64_t, std::string> stray_user_;  // each stray's Slurm user
  std::set<std::string> settling_;
  std::vector<std::pair<std::string, std::int64_t>> resubmitted_;
};

}  // namespace fairgpu::live::slurm
