// `fairgpu agent`, the node daemon of the live cluster manager (issue 5,
// docs/design.md §7), speaking the agent side of docs/live-protocol.md: register,
// heartbeat with runs and ack, launch / renew / revoke, 409 stale epoch and
// fencing. One thread drives everything (process.h's supervisor is polled).
//
// Choices where the protocol is silent:
// - Start-up: leftovers of an earlier agent of the node (pid files under
//   <state_dir>/runs/<lease>/pid) are SIGKILLed as whole process groups,
//   unless the pid now belongs to another process (start time differs), and
//   the agent waits (up to 2 s) for them to die before it registers.
// - Registration: an unreachable server, a 5xx or a malformed answer is
//   retried with a backoff doubling from register_retry_s to
//   register_retry_max_s (one log line each time). A 4xx (bad token, bad
//   body) is the operator's to fix: run_agent throws InputError.
// - Deadlines are steady-clock times taken when the answer arrived
//   (lease_s_left later). A launch whose lease_s_left is <= 0 starts and is
//   fenced at once.
// - Heartbeat timeout is measured from the registration or the last
//   heartbeat answered 200. After it, every run gets the stop sequence; the
//   agent keeps heart-beating (and re-registers only when told so by a 409).
// - 409: every run is stopped as for revoke; the agent waits for all of them
//   to exit, forgets them (the server ended those leases and requeued their
//   jobs when the node was re-registered or declared lost), and registers.
// - A launch that cannot be started (malformed action, exec failure) is
//   reported as launch_failed with the reason as log_tail, when it names a
//   lease. A launch that arrives while the agent shuts down is reported as
//   launch_failed ("agent shutting down") so the server requeues it at once.
// - A job's environment is clean: PATH, HOME and LANG, the job's env, then
//   the protocol's variables, which override the job's env (a job cannot
//   widen its CUDA_VISIBLE_DEVICES): the FAIRGPU_* ones, CUDA_VISIBLE_DEVICES
//   and the gang's rendezvous (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK,
//   NODE_RANK, LOCAL_WORLD_SIZE, FAIRGPU_NUM_NODES). Nothing else of the agent's environment
//   (its token, FAIRGPU_AGENT_TOKEN) reaches the job.
// - Users: a root agent never runs a job as root. It runs it as the
//   launch's unix_user, else as uid = gid = uid_base + tenant_slot (no
//   supplementary groups); the job's checkpoint dir and runs/<lease>/job
//   (its HOME and progress file) are then that user's, mode 0700, and its
//   log is mode 0600 in runs/<lease>, which only the agent can list. USER
//   and LOGNAME name that user (the unix_user, or fairgpu-run-<slot> for a
//   uid with no passwd entry: getpass.getuser() reads them first); the
//   job's env may override them and HOME. A
//   launch naming neither is refused (launch_failed). An agent that is not
//   root runs jobs as itself (then tenants are not isolated from each other
//   or from the agent: documented in docs/live-protocol.md).
// - renew / revoke for a lease the agent does not hold, and ack of a lease
//   that is still running, are ignored. A renew of a run that is already
//   being stopped does not undo the stop.
// - Exit reports: exit_code is the exit status, or 128 + signal when a
//   signal killed the job (signal > 0 then); revoked says whether the agent
//   had started the stop sequence (revoke, fencing, 409, shutdown).
// - Files: <state_dir>/runs/<lease>/{pid,log,job/progress}; the pid file
//   goes when the run is reaped, the log and progress files stay for
//   debugging.
// - CPUs and memory (issue 15; node_resources.h): a launch's `cpus` pins
//   the job to that many of the agent's cores (distinct from other runs'
//   while there are enough) and sets OMP_NUM_THREADS; its `memory_gb` is
//   the job's cgroup v2 memory.max where the agent can make a child cgroup,
//   else the run's `limits` says "memory limit not enforced: <why>" and the
//   job runs anyway.
// - A run's processes (issue 30, M1; node_resources.h): every run gets a
//   cgroup of its own where the agent can make one; the run ends (and is
//   reported exited) only once that cgroup is empty, its processes killed
//   with cgroup.kill when the leader exits or the stop sequence reaches
//   SIGKILL. At start the agent kills and removes the run cgroups an earlier
//   agent process of its node left (one whose pid is not a live fairgpu
//   process), waiting up to 10 s for them to empty before it registers.
//   max_pids is each run's pids.max and, for a job with a user of its own,
//   its RLIMIT_NPROC; the run's `limits` says which hold.
// - Shutdown (stop set): every run gets the stop sequence, the agent keeps
//   heart-beating until all have exited, sends one last heartbeat reporting
//   them, and returns.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fairgpu::live {

struct AgentOptions {
  std::string server_url;  // http[s]://HOST[:PORT][/PREFIX]
  // PEM CA that signed an https server's certificate; "" = the system's CAs.
  std::string ca_file;
  std::string token;       // this node's token (`fairgpu node-token NODE`)
  std::string node;
  std::string gpu_type;
  std::vector<int> devices;
  // Where other nodes reach this one's jobs (a gang's MASTER_ADDR when rank
  // 0 runs here); "" = the address the server sees the registration from.
  std::string address;
  // What the node declares (`fairgpu agent` reads them from the machine:
  // the affinity mask's size and MemTotal).
  int cpus = 0;
  double memory_gb = 0.0;
  // The cores jobs are pinned to (node_resources.h); empty = the agent's
  // affinity mask.
  std::vector<int> cpu_ids;
  // The cgroup v2 directory under which each run gets a child holding its
  // memory limit; "" = the agent's own cgroup, "none" = no memory limits.
  // An agent in that directory first moves into a leaf of it
  // (node_resources.h).
  std::string cgroup_dir;
  // The most processes a run may have at once (node_resources.h): pids.max
  // of its cgroup, and RLIMIT_NPROC of its user when it runs as one of its
  // own (a root agent's); 0 = no limit.
  int max_pids = 4096;
  // pid files, logs, progress files; "" means ./fairgpu-agent-<node>.
  std::string state_dir;
  // A root agent runs a tenant's job as the tenant's unix_user when the
  // launch names one, else as uid = gid = uid_base + the tenant's slot (the
  // server assigns slots once, the same on every node). No passwd entry is
  // needed; the range must be unused on the node.
  int uid_base = 200000;
  // Connection / read / write timeout of every request, so that a dead
  // server does not hang the loop (it delays stop sequences by at most this).
  double http_timeout_s = 2.0;
  double register_retry_s = 1.0;
  double register_retry_max_s = 30.0;
  // How often the loop wakes to reap and advance stop sequences between
  // heartbeats.
  double tick_s = 0.05;
  // One line per event; default: "<line>\n" on stderr.
  std::function<void(const std::string&)> log;
};

// Checks the options (URL, node, GPU type, devices, cpus, memory); throws
// InputError naming the field.
void check_agent_options(const AgentOptions& options);

// Runs the agent until `stop` is set (the caller's signal handlers set it):
// then its runs are stopped as for revoke, awaited and reported in a last
// heartbeat. Returns 0. Throws InputError for bad options or when the server
// refuses the registration (4xx).
int run_agent(const AgentOptions& options, const std::atomic<bool>& stop);

// Device discovery (`fairgpu agent --gpus`, or nvidia-smi).
struct GpuSet {
  std::string gpu_type;
  std::vector<int> devices;
};

// `TYPE:N` (devices 0..N-1) or `TYPE:ID,ID,...` (a single device id is
// written with a trailing comma, `v100:5,`, since `v100:5` is a count).
// Throws InputError("--gpus", ...).
GpuSet parse_gpus_flag(const std::string& text);

// The GPU type of an nvidia-smi name: lowercased, split at spaces and '-',
// the words nvidia / tesla / geforce / quadro dropped, "rtx" / "gtx" / "titan"
// joined to the word after them, and the first remaining word holding a digit
// kept ("Tesla V100-SXM2-16GB" -> "v100", "NVIDIA A100-SXM4-40GB" -> "a100",
// "NVIDIA GeForce RTX 3090" -> "rtx3090", "Tesla T4" -> "t4"); without such a
// word, the remaining words joined by '-'. Only [a-z0-9] are kept in a word.
std::string normalise_gpu_name(const std::string& name);

// Parses `nvidia-smi --query-gpu=index,name --format=csv,noheader` output.
// Throws InputError when it lists no GPU, a malformed line, or GPUs of more
// than one type (a node has one GPU type).
GpuSet parse_nvidia_smi(const std::string& csv);

// Runs nvidia-smi when it is on PATH; nullopt when it is not.
std::optional<GpuSet> discover_gpus();

}  // namespace fairgpu::live
