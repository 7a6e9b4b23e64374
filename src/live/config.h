// `fairgpu serve`'s configuration (docs/design.md §7, docs/live-protocol.md): where it
// listens and keeps its data, the policy and its options, the lease and
// heartbeat timings, profiling, tenants with their API tokens, and the admin
// and agent tokens. JSON, strictly read: an unknown or ill-typed field is an
// InputError naming the file and field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fairgpu/scheduler.h"

namespace fairgpu::live {

// Per-tenant limits (issue 30, M3): 0 = unlimited. The config's top-level
// "quotas" is every tenant's default; a tenant's own "quotas" overrides it
// key by key. A reload that lowers one stops nothing that runs: it applies to
// the next submissions and starts.
struct TenantQuotas {
  std::int64_t max_jobs_queued = 0;       // jobs waiting (queued or profiling)
  std::int64_t max_jobs_active = 0;       // jobs not yet ended (waiting or running)
  std::int64_t max_gpus_per_job = 0;      // one job's gang size
  std::int64_t max_gpus_running = 0;      // GPUs the tenant's runs hold at once
  // Bytes of the tenant's jobs' checkpoint folders (<checkpoint_dir>/<job>),
  // as last measured by the server (Manager::measure_checkpoints).
  std::int64_t max_checkpoint_bytes = 0;
  bool operator==(const TenantQuotas&) const = default;
};

struct TenantConfig {
  std::string name;
  double weight = 1.0;
  std::string token;  // inline, or read from "token_file" / "token_env"
  // The Unix user a root agent runs this tenant's jobs as; "" = a uid the
  // agent derives from the tenant's slot (agent.h, --uid-base).
  std::string unix_user;
  TenantQuotas quotas{};  // the config's defaults with the tenant's overrides
  // The Slurm account its jobs are charged to (sbatch --account), so that
  // Slurm's accounting (sacct) attributes GPU-hours to tenants; "" = the
  // submitting user's default account. Slurm backend only.
  std::string account{};
};

// Names that end up in paths, Prometheus labels and log lines (tenants,
// nodes, GPU types, Unix users): letters, digits, '-', '_', '.', at most 64,
// not "." or "..". "" when `s` is one, else what is wrong with it.
std::string name_problem(const std::string& s);

// `"backend": "slurm"`: fairgpu schedules an existing Slurm cluster's
// partition (docs/executors.md, src/live/slurm/).
struct SlurmBackendConfig {
  std::string partition;
  std::string conf;       // slurm.conf for Slurm's tools; "" = Slurm's default
  double poll_s = 1.0;    // how often Slurm's queue and nodes are read
  double timeout_s = 30;  // per Slurm command
  std::string sbatch = "sbatch", scontrol = "scontrol", squeue = "squeue", scancel = "scancel";
};

// The HTTP front's bounds on what clients may hold (issue 30, H3; the config's
// "http" object, docs/operator-guide.md; src/live/http_front.h).
struct HttpLimits {
  // A request's headers and body (and a TLS handshake) must arrive within
  // this of the connection's start or of the previous answer.
  double request_timeout_s = 10;
  int max_connections_per_peer = 32;  // per client address, queued or served
  int workers = 128;                  // connections served at once
  int queue = 256;                    // accepted connections waiting for a worker
};

struct ServeConfig {
  std::string source = "built-in";
  std::string host = "127.0.0.1";
  int port = 8470;
  std::string data_dir = "fairgpu-data";
  std::string checkpoint_dir;  // shared by every agent; default <data_dir>/checkpoints
  std::string policy = "oef-coop";
  RoundPolicyOptions policy_options;  // round_s: the scheduling interval (policy default if 0)
  double heartbeat_s = 1.0;
  double heartbeat_timeout_s = 15.0;
  double grace_s = 30.0;
  double kill_after_s = 5.0;
  int max_retries = 2;  // a failing job is run at most 1 + max_retries times
  // A node whose launches fail this many times in a row for the node's own
  // reason (a full disk, a cgroup it cannot make; never the job's) is
  // drained, its reason saying why, until the admin undrains it (0: never).
  int node_fault_limit = 3;
  // A job finished, failed or cancelled this long ago leaves the default
  // job listing (kept in the store; listed with all=1). Reloadable.
  double job_retention_s = 7 * 86400.0;
  // A job type without a profile on some GPU type first runs this many
  // iterations there (a profiling lease), at most profile_timeout_s.
  double profile_iterations = 50.0;
  double profile_timeout_s = 300.0;
  std::string profiles_file;  // optional: Gavel-format profiles known from the start
  double restart_overhead_s = 10.0;  // what policies assume a restart costs
  // (A config's "agent_token" is deprecated, checked for its form and
  // ignored: agents use per-node tokens, `fairgpu node-token`.)
  std::string admin_token;
  std::vector<TenantConfig> tenants;
  TenantQuotas quotas;  // the default of every tenant (those added by the API too)
  // TLS for the API and the agent protocol: PEM certificate (chain) and
  // private key; both empty = plain http.
  std::string tls_cert, tls_key;
  // GET /metrics names tenants and nodes: it needs the admin token or
  // metrics_token unless metrics_open.
  bool metrics_open = false;
  std::string metrics_token;
  HttpLimits http;
  // "http": {"agent_listen": "HOST:PORT"}: the agents' own listener (register
  // and heartbeat only), with agent_workers workers, so that heartbeats never
  // wait behind clients; agent_port -1: none (agents use the API's port).
  std::string agent_host;
  int agent_port = -1;
  int agent_workers = 64;
  std::string backend = "agents";  // agents | slurm
  SlurmBackendConfig slurm;        // backend slurm
};

// A secret (API token) from a file: its first line, trailing blanks cut.
// As ssh does with a private key, a file that others may read is refused
// (group/other permission bits). Throws InputError(source, field, ...).
std::string read_token_file(const std::string& path, const std::string& source,
                            const std::string& field);

// Whether a presented API token is `secret`, in a time that depends on
// neither where they differ nor how long either is (issue 30, low: a compare
// that stops at the first different byte lets a client guess a token byte by
// byte from the answers' timing). An empty secret matches nothing.
bool same_secret(std::string_view presented, std::string_view secret);

// `base_dir`: the folder relative paths in the config (data_dir,
// checkpoint_dir, profiles, tls cert and key, token files) are taken from;
// "" leaves them as written.
ServeConfig parse_serve_config(std::string_view json_text, const std::string& source,
                               const std::string& base_dir = "");
// Relative paths are resolved against the config file's folder (made
// absolute), not the current directory: `fairgpu serve --config
// /etc/fairgpu/serve.json` finds the same files from wherever it starts.
ServeConfig read_serve_config(const std::string& path);

// `path` as the config names it, taken relative to `base_dir` ("": as is).
std::string config_relative_path(const std::string& base_dir, const std::string& path);

}  // namespace fairgpu::live
