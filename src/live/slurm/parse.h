// Parsers of what Slurm 22.05's command-line tools print (specs/slurm.md
// "Reading state"): the one `squeue` and the one `scontrol -d -o show job`
// of a poll, `scontrol -d -o show node` for the cluster, `sbatch --parsable`,
// and the combined output of a batch of commands fed to one `scontrol` on
// stdin.
//
// Strict: anything that does not read as Slurm prints it (an unknown state,
// a count that is not a number, a line without its JobId) throws InputError
// whose one-line message names the command, the line and the field. Nothing
// is dropped silently.
//
// Trust: the squeue format fairgpu asks for (`%i|%T|%r|%N|%b|%u`) holds no
// text a user chooses, so it is read for every job (jobs submitted outside
// fairgpu are capacity taken). `scontrol show job` prints free text (JobName,
// Comment, Command, ...) unquoted among its `Key=Value` fields, so a value
// may contain " JobState=...": parse_job_details keeps the first occurrence
// of each key, which is safe for jobs whose name fairgpu chose (JobName is
// the only free text before the fields read here; Comment and the paths come
// after them); callers use its records only for their own jobs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fairgpu::live::slurm {

// A job's state as squeue's %T and scontrol's JobState print it.
enum class JobState {
  kPending,
  kRunning,
  kSuspended,
  kCompleting,
  kCompleted,
  kConfiguring,
  kCancelled,
  kFailed,
  kTimeout,
  kPreempted,
  kNodeFail,
  kRevoked,
  kSpecialExit,
  kBootFail,
  kDeadline,
  kOutOfMemory,
  kRequeued,
  kRequeueHold,
  kRequeueFed,
  kResizing,
  kResvDelHold,
  kSignaling,
  kStageOut,
  kStopped,
};

// nullopt for a name Slurm 22.05 does not print.
std::optional<JobState> job_state_from_name(std::string_view name);
const char* job_state_name(JobState state);
// The job holds (or is about to hold) nodes: running, configuring,
// completing, suspended, signaling, stage-out, resizing.
bool holds_nodes(JobState state);
// The job has ended and will not run again unless requeued.
bool is_final(JobState state);

// Expands a Slurm host list ("n[1-3,7],gpu-a[01-02]x"; "" and "(null)" are
// empty). Brackets may repeat in one name ("r[1-2]n[1-2]"), ranges keep their
// zero padding. At most kMaxHostListNames names (else InputError).
inline constexpr std::size_t kMaxHostListNames = 100000;
std::vector<std::string> expand_host_list(std::string_view list, const std::string& source,
                                          const std::string& field);

// Expands an index list "0-1,3" (GRES IDX); ascending, no duplicates.
std::vector<int> expand_index_list(std::string_view list, const std::string& source,
                                   const std::string& field);

// One GRES entry: "gpu:v100:4", "gpu:2", "gpu:v100:1(IDX:0,2-3)", "gpu:k80:4(S:0-1)".
struct Gres {
  std::string name;  // "gpu"
  std::string type;  // "v100"; "" when untyped
  int count = 0;
  std::vector<int> indices;  // from "(IDX:...)"; empty otherwise
};
// A comma-separated GRES list ("(null)", "N/A" and "" are empty); commas
// inside parentheses belong to the entry.
std::vector<Gres> parse_gres_list(std::string_view text, const std::string& source,
                                  const std::string& field);

// One line of `squeue -h -o '%i|%T|%r|%N|%b|%u'` (kSqueueFormat).
inline constexpr const char* kSqueueFormat = "%i|%T|%r|%N|%b|%u";
struct QueueEntry {
  std::int64_t job_id = 0;
  JobState state = JobState::kPending;
  std::string reason;
  std::vector<std::string> nodes;  // expanded
  int gpus_per_node = 0;           // from %b (TresPerNode "gres:gpu[:type]:N"); 0 when none
  std::string user;
};
// Every line (blank lines skipped); a job id seen twice is an error.
std::vector<QueueEntry> parse_squeue(std::string_view text);

// What `scontrol -d -o show job` says of one job.
struct NodeGpus {
  std::string node;
  std::string gpu_type;      // "" when the job holds no GPU there
  std::vector<int> indices;  // the node's GPU indices (IDX) the job holds
};
struct JobDetail {
  std::int64_t job_id = 0;
  JobState state = JobState::kPending;
  std::string reason;  // Reason=, as scontrol prints it
  bool held = false;   // pending with Priority=0 (a user or admin hold)
  int restarts = 0;
  int exit_code = 0;  // ExitCode=E:S
  int exit_signal = 0;
  std::vector<std::string> nodes;           // NodeList, expanded
  std::vector<std::string> required_nodes;  // ReqNodeList (the pin), expanded
  std::vector<NodeGpus> per_node;           // -d's "Nodes=... GRES=..." groups, while allocated
  std::string partition;
  std::string user;     // UserId's name ("root" of "root(0)")
  std::string name;     // JobName (see the trust note above)
  std::string comment;  // Comment; "" when absent
};
// Every line ("No jobs in the system" is an empty list); a job id seen twice
// is an error.
// With `unreadable`, a line that does not parse (another user's job named
// 'x JobState=BOGUS', say) is left out and its problem kept by job id; a
// line whose JobId does not read still throws. Without it, any bad line
// throws.
std::vector<JobDetail> parse_job_details(
    std::string_view text, std::map<std::int64_t, std::string>* unreadable = nullptr);

// What `scontrol -d -o show node` says of one node.
struct NodeInfo {
  std::string name;
  std::string base_state;                // IDLE, MIXED, ALLOCATED, DOWN, ...
  std::vector<std::string> flags;        // DRAIN, NOT_RESPONDING, COMPLETING, ...
  std::vector<Gres> gres;                // Gres= (configured), gpu entries only
  std::vector<Gres> gres_used;           // GresUsed= (all jobs, fairgpu's or not), gpu entries only
  int cpus = 0;                          // CPUTot
  int cpus_allocated = 0;                // CPUAlloc
  std::int64_t memory_mb = 0;            // RealMemory
  std::int64_t memory_allocated_mb = 0;  // AllocMem
  std::vector<std::string> partitions;
  std::string reason;  // Reason= (drain/down), "" when none
  // Jobs may be started here: IDLE, MIXED or ALLOCATED without DRAIN,
  // NOT_RESPONDING, FAIL, power-saving or reboot flags.
  bool usable() const;
  // The GPU type when the node has exactly one ("" otherwise) and its count.
  std::string gpu_type() const;
  int gpu_count() const;
  // GPUs any job holds now (GresUsed).
  int gpus_used() const;
};
std::vector<NodeInfo> parse_nodes(std::string_view text);

// `sbatch --parsable` prints "JOBID" or "JOBID;CLUSTER".
std::int64_t parse_sbatch_output(std::string_view text);

// The combined stdout+stderr of `scontrol` reading `commands` on stdin: it
// echoes "scontrol: <command>" before running each, then prints that
// command's errors. Returns one entry per command: its error lines joined by
// "; " ("" when it succeeded). Output that does not follow the commands'
// order is an error.
std::vector<std::string> split_batch_output(std::string_view output,
                                            const std::vector<std::string>& commands);

}  // namespace fairgpu::live::slurm
