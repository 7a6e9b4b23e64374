// fairgpu's view of a Slurm cluster through Slurm's own command-line tools
// (specs/slurm.md: libslurm exits the process on a bad configuration and is
// tied to one release; slurmrestd 22.05 cannot pin or requeue).
//
// SlurmClient is the small interface the Slurm executor drives; the one
// implementation here, CommandLineSlurm, runs sbatch/scontrol/squeue/scancel
// as child processes with a timeout each:
// - submit: one `sbatch --parsable --hold --requeue` per job, the script a
//   wrapper (submit_script) read from sbatch's stdin;
// - apply: every write of a scheduling round (requeuehold, hold, pin =
//   `update JobId=J NodeList=... StartTime=now [NumCPUs=C MinMemoryNode=M]`,
//   release) through ONE `scontrol` process reading the commands on stdin
//   (COLUMNS set wide: readline would wrap the echo of a long line);
// - signal_checkpoint: `scancel --signal=USR1 --full` (the executor follows
//   it with requeuehold after the grace period: a signal sent before the
//   job's script started is lost, requeuehold always reaches the job);
// - read_jobs: one `squeue` plus one `scontrol -d -o show job`;
// - read_nodes: one `scontrol -d -o show node`.
// A command that cannot start, times out, or fails as a whole throws
// SlurmError (one line); per-job refusals inside a batch are returned. A
// batch or scancel that could not reach slurmctld ("Unable to contact slurm
// controller", or "Unexpected message received" while it shuts down) throws
// too: nothing it says about single jobs can be trusted, and the executor
// redoes what Slurm does not show done at its next poll.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "live/slurm/command.h"
#include "live/slurm/parse.h"

namespace fairgpu::live::slurm {

// A Slurm command failed: what() is one line naming the command.
class SlurmError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SlurmSettings {
  std::string partition;  // "" = the cluster's default partition
  std::string conf;       // SLURM_CONF given to the commands; "" = Slurm's default
  std::string sbatch = "sbatch";
  std::string scontrol = "scontrol";
  std::string squeue = "squeue";
  std::string scancel = "scancel";
  double timeout_s = 30;  // per command
  double signal_timeout_s = 2;  // scancel --signal (best effort)
};

// A fairgpu job as a held Slurm job.
struct SubmitSpec {
  std::string job;  // fairgpu's job id: FAIRGPU_JOB_ID, Slurm name "fairgpu-<job>"
  // The command: argv when not empty, else shell_command (run by /bin/sh -c).
  std::vector<std::string> argv;
  std::string shell_command;
  int nodes = 1;
  int gpus_per_node = 1;                // untyped: the pin chooses the GPU type
  int cpus_per_node = 0;                // 0 = Slurm's default
  std::int64_t memory_mb_per_node = 0;  // 0 = Slurm's default
  // FAIRGPU_CHECKPOINT_DIR (created here); it also holds the run file the
  // wrapper reads (run_file_path). No ',' (sbatch --export separator).
  std::string checkpoint_dir;
  std::string progress_file;  // FAIRGPU_PROGRESS_FILE; no ','
  std::string log_path;       // the job's stdout+stderr; no '%' or '\' (Slurm patterns)
  std::string working_dir;    // "" = the submitter's
  // Slurm's Comment: the submitting fairgpu's instance tag, so that after a
  // crash between sbatch and storing the id, the job is found again by name
  // and tag (letters, digits, '-', '_', '.', ':', '='; "" = none).
  std::string comment;
  // The job's own variables, exported by the wrapper (any value).
  std::vector<std::pair<std::string, std::string>> env;
  // The Unix user the job runs as (sbatch --uid/--gid, root only; "" = the
  // submitter). Its checkpoint directory and log are made that user's, and
  // the job starts in its checkpoint directory unless working_dir says.
  std::string run_as_user{};
  // The Slurm account the job is charged to (sbatch --account; "" = the
  // user's default): a tenant's, so that sacct attributes usage to tenants.
  std::string account{};
};

// A user a job may run as: any but root.
struct UnixUser {
  std::string name;
  unsigned uid = 0, gid = 0;
};
// nullopt when no such user exists on this machine or it is root.
std::optional<UnixUser> find_run_as_user(const std::string& name);
// Why `name` cannot run jobs ("" when it can).
std::string run_as_problem(const std::string& name);
// Makes a job's checkpoint directory (mode 0700) and log file its user's.
// Throws SlurmError.
void give_to(const UnixUser& user, const std::string& checkpoint_dir, const std::string& log_path);

// The batch script of a job: reads the run file (lease id, GPU type, GPUs
// per node and MASTER_PORT of the current run, written before each
// release), sets FAIRGPU_LEASE_ID, FAIRGPU_GPU_TYPE, FAIRGPU_NUM_WORKERS
// (GPUs on the node x nodes), the rendezvous as the agents set it (one
// process per node: MASTER_ADDR = the first node's address, MASTER_PORT,
// WORLD_SIZE, RANK = NODE_RANK x LOCAL_WORLD_SIZE, NODE_RANK,
// LOCAL_WORLD_SIZE, FAIRGPU_NUM_NODES; docs/job-protocol.md) and the job's
// env, then `exec`s the command (through `srun`, one task per node, when the
// run has several nodes: a run's shape is set at its pin, not at sbatch),
// so that `scancel --signal=USR1 --full` reaches the command itself.
std::string submit_script(const SubmitSpec& spec);

// The Slurm backend's output of a job: <checkpoint_root>/<job>.log, stdout and
// stderr of its runs (sbatch --output), beside its checkpoint directory
// <checkpoint_root>/<job>. serve, `fairgpu logs` and whatever reads a job's
// output on this backend use this one function.
std::string job_log_path(const std::string& checkpoint_root, const std::string& job);

// The file in a job's checkpoint dir that tells its next run which lease and
// GPU type it runs under (a pending job's environment cannot change).
std::string run_file_path(const std::string& checkpoint_dir);
// The run's fence: every process of a run holds a shared flock on it (the
// wrapper takes it on each node). True when none does any more: the
// processes a dead slurmd left behind are gone.
std::string fence_file_path(const std::string& checkpoint_dir);
bool run_processes_gone(const std::string& checkpoint_dir);
// A run Slurm starts without the GPUs it asked for (SLURM_GPUS_ON_NODE
// short; seen right after slurmctld's own restart) is refused by the wrapper:
// it writes its lease id to this file and exits kNoGpuExitCode, and the
// executor requeues it as never started, not failed.
inline constexpr int kNoGpuExitCode = 75;  // EX_TEMPFAIL
std::string no_gpu_file_path(const std::string& checkpoint_dir);
// Whether the run of `lease` ended so (the file names it); removes the file.
bool take_no_gpu_mark(const std::string& checkpoint_dir, std::int64_t lease);
// The wrapper writes its lease id to this file just before it starts the
// job's command: a run that failed without it never began (Slurm failed its
// launch), and the executor requeues it as never started, not failed.
std::string began_file_path(const std::string& checkpoint_dir);
// Whether the run of `lease` began (the file names it).
bool run_began(const std::string& checkpoint_dir, std::int64_t lease);
// Writes it atomically (a temporary file renamed over it). The run's shape
// goes with it: its GPUs per node (the wrapper refuses a run started with
// fewer; 0 = the submitted --gres) and its gang's MASTER_PORT (0 = the
// wrapper's default, kMasterPortBase).
void write_run_file(const std::string& checkpoint_dir, std::int64_t lease,
                    const std::string& gpu_type, int gpus_per_node = 0, int master_port = 0);

// One round's writes. apply() sends them in this order: requeue_hold, hold,
// pins, release (a job is re-held before it is re-pinned, pinned before it
// is released).
struct RoundWrites {
  struct Pin {
    std::int64_t job = 0;
    std::vector<std::string> nodes;
    // The run's CPU and memory grant (0: none; the job keeps what it has):
    // NumCPUs= (all nodes) and MinMemoryNode= (MB), in the same update.
    int cpus = 0;
    std::int64_t memory_mb_per_node = 0;
    // The run's shape (0: the job keeps its own): NumNodes=<K>-<K> (K = nodes.size(); a bare K is refused)
    // TresPerNode=gres:gpu:<gpus_per_node>. A held job takes a new shape
    // (Slurm 22.05), so one Slurm job runs every lease of its fairgpu job,
    // over one node or several.
    int gpus_per_node = 0;
  };
  std::vector<std::int64_t> requeue_hold;  // running or ended → pending, held
  std::vector<std::int64_t> hold;          // pending → held (e.g. requeued by a node failure)
  std::vector<Pin> pins;  // NodeList=... [NumNodes= TresPerNode=] StartTime=now [NumCPUs= MinMemoryNode=]
  std::vector<std::int64_t> release;       // one `release J,K,...`
  bool empty() const {
    return requeue_hold.empty() && hold.empty() && pins.empty() && release.empty();
  }
};

// The scontrol commands of a round, in order (what apply() writes to stdin).
std::vector<std::string> round_commands(const RoundWrites& writes);

struct JobsSnapshot {
  std::vector<QueueEntry> queue;             // squeue: every job of the partition
  std::map<std::int64_t, JobDetail> detail;  // scontrol: by job id (see parse.h on trust)
  // Lines of `scontrol show job` that did not parse, by job id (another
  // user's job named 'x JobState=BOGUS'): left out of `detail`; only one of
  // fairgpu's own jobs among them fails an exchange (issue 30 H7).
  std::map<std::int64_t, std::string> unreadable;
};

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;
  // Submits a held job; returns its Slurm job id.
  virtual std::int64_t submit(const SubmitSpec& spec) = 0;
  // Applies a round's writes; returns the refusals by job id (a job that
  // ended meanwhile, say). Throws SlurmError when scontrol itself failed.
  virtual std::map<std::int64_t, std::string> apply(const RoundWrites& writes) = 0;
  // SIGUSR1 to every process of each job; returns refusals by job id.
  virtual std::map<std::int64_t, std::string> signal_checkpoint(
      const std::vector<std::int64_t>& jobs) = 0;
  virtual std::map<std::int64_t, std::string> cancel(const std::vector<std::int64_t>& jobs) = 0;
  virtual JobsSnapshot read_jobs() = 0;
  virtual std::vector<NodeInfo> read_nodes() = 0;
  // `fairgpu drain`/`undrain` in Slurm: State=DRAIN Reason=fairgpu (running
  // jobs go on; fairgpu revokes its own), or State=RESUME. Throws SlurmError.
  virtual void set_node_drained(const std::string& node, bool drained) = 0;
};

class CommandLineSlurm : public SlurmClient {
 public:
  // Throws InputError (field "conf") when settings.conf names no readable
  // file: Slurm's tools would retry reading it for 60 s.
  explicit CommandLineSlurm(SlurmSettings settings);
  // The configuration as a whole, before serving: the controller answers and
  // the partition exists (InputError naming "partition"); SlurmError when
  // no controller answers within the timeout.
  void check();
  std::int64_t submit(const SubmitSpec& spec) override;
  std::map<std::int64_t, std::string> apply(const RoundWrites& writes) override;
  std::map<std::int64_t, std::string> signal_checkpoint(
      const std::vector<std::int64_t>& jobs) override;
  std::map<std::int64_t, std::string> cancel(const std::vector<std::int64_t>& jobs) override;
  JobsSnapshot read_jobs() override;
  std::vector<NodeInfo> read_nodes() override;
  void set_node_drained(const std::string& node, bool drained) override;

  const SlurmSettings& settings() const { return settings_; }

 private:
  // Runs a command; throws SlurmError when it cannot start or times out.
  // timeout_s <= 0: settings.timeout_s.
  CommandResult run(std::vector<std::string> argv, const std::string& input, bool merge,
                    double timeout_s = 0);
  // Runs a command that must exit 0; returns its stdout.
  std::string run_ok(std::vector<std::string> argv);
  std::map<std::int64_t, std::string> scancel(std::vector<std::string> args,
                                              const std::vector<std::int64_t>& jobs,
                                              double timeout_s = 0);
  SlurmSettings settings_;
};

}  // namespace fairgpu::live::slurm
