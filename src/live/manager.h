// The live cluster manager (docs/design.md §7; OEF §5 and Astraea §5.1 for leases,
// Shockwave §7 for checkpoint-on-revoke, Gavel/Synergy for profiling): the
// same scheduling core and round policies as the simulator, on the wall
// clock. The Manager is the lease manager; an Executor (executor.h,
// docs/executors.md) carries out its starts and reports what runs: here
// fairgpu's own agents (AgentExecutor, agent_executor.h).
//
//   submissions ──► Manager ──► SchedulerState ──► RoundPolicy::plan()
//                      │                               │
//                      ▼                               ▼
//                   Store (SQLite, group commit)   leases: pending → active
//                      ▲                               → revoking → ended
//                      └──── executor's events ◄───────┘ (starts; agents:
//                            (agents: heartbeats)         launch/renew/revoke)
//
// A lease is the right to run one job on devices of one node until its end
// (a gang spread over nodes holds one part lease per node, below).
// At each scheduling point the policy renews it (same devices), moves it or
// leaves it out (revoke: the agent signals the job to checkpoint and exit).
// A new lease stays pending until the job's previous run and every previous
// run on its devices have stopped, so no job ever runs twice and no device is
// shared. Every decision is committed before any agent hears of it; a
// restarted manager reloads the store and carries on.
//
// Files: manager.cc (the scheduling core and leases), manager_api.cc (tenants'
// and admin calls, metrics), manager_runs.cc (what the executor reports:
// nodes up and lost, runs' progress and ends).
//
// Where the papers are silent:
//   - Gangs across nodes: a job the policy places over several nodes runs
//     one process per node, each under a part lease of one gang (consecutive
//     lease ids; the first, rank 0's, is the gang id and the job's lease).
//     The parts activate together (when every one's devices are free), are
//     renewed and revoked together, and a part that ends for any reason but
//     a clean finish (a failure, a fence, a lost node) revokes the others. A
//     part that exits cleanly waits ("exited") for the others; the job
//     finishes when every part has. Progress is rank 0's. The launch carries
//     the rendezvous (MASTER_ADDR = rank 0's node address, MASTER_PORT =
//     kMasterPortBase + gang id mod kMasterPortSpan, WORLD_SIZE, RANK,
//     NODE_RANK, LOCAL_WORLD_SIZE). Its nodes may be of adjacent GPU types
//     where the policy's placer spans types (docs/live-protocol.md, "Where
//     a gang runs"). A job larger than every same-type pool
//     of GPUs is refused at submission; profiling stays on one node.
//   - Profiling: a job type with no throughput on some GPU type in the
//     cluster first runs profile_iterations on that type (one job at a time
//     per (job type, GPU type), on free devices or devices whose lease
//     ended), timed from its first progress report so start-up and
//     checkpoint loading are not counted, over at least five heartbeats. A gang of g workers
//     measured at r it/s is stored as r for g workers and r/g for one (linear scaling) when g > 1.
//     Measurements are kept per tenant, bounded, cross-checked against runs'
//     progress and reset by the admin (manager_profiles.cc, issue 30 M2).
//   - A lost node's jobs are relaunched only grace + kill_after + one
//     heartbeat after the node's heartbeat timeout, when its agent has fenced
//     them (docs/live-protocol.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "fairgpu/scheduler.h"
#include "live/agent_executor.h"
#include "live/config.h"
#include "live/executor.h"
#include "live/histogram.h"
#include "live/store.h"

namespace fairgpu::live {

namespace slurm {
class SlurmClient;
class SlurmExecutor;
}  // namespace slurm

// An error answered to the caller: HTTP status and one line naming the field.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

struct Caller {
  enum class Role { kNone, kTenant, kAdmin, kAgent };
  Role role = Role::kNone;
  std::string tenant;  // kTenant
  std::string node;    // kAgent: the node its token was issued for
};


class Manager : private LeaseHost {
 public:
  // Opens the store in config.data_dir and reloads what it holds. `clock`
  // gives wall time in seconds (tests pass their own). Backend slurm: Slurm's
  // tools per config.slurm, checked first (InputError, one line, when no
  // controller answers or the partition is unknown).
  explicit Manager(ServeConfig config, std::function<double()> clock = {});
  ~Manager();

  Caller authenticate(std::string_view authorization_header) const;

  // The HTTP API (docs/live-protocol.md); each throws ApiError.
  nlohmann::json submit(const Caller& c, const nlohmann::json& body);
  nlohmann::json jobs(const Caller& c, const std::string& state_filter) const;  // every job
  // GET /v1/jobs: states comma-separated ("": any); jobs alive in
  // [since, until) (unix seconds or ISO-8601); without `all` or a window,
  // jobs that ended over config job_retention_s ago are left out.
  struct JobsQuery {
    std::string state, since, until;
    bool all = false;
  };
  nlohmann::json jobs(const Caller& c, const JobsQuery& q) const;
  nlohmann::json job(const Caller& c, const std::string& id) const;
  nlohmann::json cancel(const Caller& c, const std::string& id);
  // GPU usage over a window (manager_usage.cc, docs/live-protocol.md): since
  // and until as unix seconds or ISO-8601 ("": all history, now); by
  // "tenant" or "job"; a tenant token sees its own only (403 for another).
  struct UsageQuery {
    std::string since, until, tenant, by = "tenant";
  };
  nlohmann::json usage(const Caller& c, const UsageQuery& q) const;
  // GET /v1/jobs/{id}/log (manager_logs.cc): up to 64 KiB of the output of
  // the job's run under `lease` (0: its latest) from `offset`, base64, from
  // the run's agent (relayed over its heartbeats; waits up to 3 heartbeats
  // + 5 s) or, on Slurm, from <checkpoint_dir>/<job>.log. A tenant's own
  // jobs only (403).
  nlohmann::json job_log(const Caller& c, const std::string& id, std::int64_t lease,
                         std::int64_t offset);
  nlohmann::json tenants(const Caller& c) const;
  // Admin: adds a tenant ({"name", "weight"?, "token"}) or changes an
  // existing one's weight (and token, when given). Persisted; the policy sees
  // it from the next scheduling point.
  nlohmann::json set_tenant(const Caller& c, const nlohmann::json& body);
  nlohmann::json cluster(const Caller& c) const;
  // `reason` (drain only; may be empty) is kept, persisted and shown by
  // cluster() until the node is undrained.
  nlohmann::json set_drained(const Caller& c, const std::string& node, bool drained,
                             const std::string& reason = "");
  // Admin: a fresh token for the agent of `node` (replacing, and so revoking,
  // the one issued before). It authorises register and heartbeat for that
  // node only. Persisted. Answer {"node", "token"}.
  nlohmann::json issue_node_token(const Caller& c, const std::string& node);
  // Every profile the caller may see ("profiles": the file's, measured ones,
  // shared ones) and what the policy uses for the caller's jobs ("in_use";
  // every tenant's for the admin). manager_profiles.cc.
  nlohmann::json profiles(const Caller& c) const;
  // Admin: forgets the measured profiles of `job_type` (of one tenant when
  // `tenant` is given, on one GPU type when gpu_type is not empty); they are
  // measured again as for a new job type. Persisted. 404 when none matches.
  nlohmann::json reset_profiles(const Caller& c, const std::string& job_type,
                                const std::optional<std::string>& tenant,
                                const std::string& gpu_type);
  // The agents' calls, answered by the agent executor. `peer` is the address
  // the request came from: the node's address when the body names none.
  nlohmann::json register_agent(const Caller& c, const nlohmann::json& body,
                                const std::string& peer = "");
  nlohmann::json heartbeat(const Caller& c, const nlohmann::json& body);
  std::string metrics() const;
  // The read-only status page served at / (manager_status.cc,
  // status_page.h): nodes, the queue with pending reasons, each tenant's
  // share against its weight over the last hours, recent events. HTML.
  std::string status_page() const;
  // Whether GET /metrics may be answered: "metrics_open", or the admin
  // token or metrics_token as bearer token.
  bool metrics_allowed(std::string_view authorization_header) const;

  // One scheduling point: profiling leases, the policy's plan, its leases
  // committed. `at` is the point on the round grid (<= the clock's now; the
  // clock's now when < 0): leases end on the grid, so at the next point they
  // have ended exactly, however late the thread woke. Returns the seconds
  // the decision took.
  double schedule(double at = -1.0);
  // Where the round grid resumes after a restart: the end of the leases
  // still running (synchronous rounds end together), at most one interval
  // ahead, and not before now.
  double first_point() const;
  // The policy's plan() alone on the current state, not carried out: the
  // decision as the simulator makes it (benchmarks' baseline). Seconds.
  double time_plan_only();
  // Declares nodes lost whose heartbeat is overdue and relaunchable the jobs
  // whose fence time passed. Backend slurm: also sends Slurm what was decided
  // since the last tick (once durable) and reads its queue and nodes.
  void tick();
  // The Slurm job id of a fairgpu job (0: none, or not backend slurm).
  std::int64_t slurm_job(const std::string& job) const;
  // Scheduling points every policy interval and ticks every heartbeat_s
  // until stop() (blocking; the server runs it on a thread).
  void run();
  void stop();

  // max_checkpoint_bytes: sums the bytes of every job's checkpoint folder
  // (<checkpoint_dir>/<job id>, regular files, links not followed) per
  // tenant, for the tenants with that quota; submit() compares the last
  // measure. run() calls it every kCheckpointMeasureS on a thread of its own
  // (a large shared folder may take long to walk; nothing waits for it).
  void measure_checkpoints();
  static constexpr double kCheckpointMeasureS = 30.0;

  double interval() const;
  const ServeConfig& config() const { return config_; }

  // SIGHUP (manager_reload.cc): takes the tenants (weights, tokens, Unix
  // users; a tenant left out of `next` keeps its jobs but its token stops
  // working), the admin and metrics tokens, metrics_open, the policy and its
  // options (round_s included) and max_retries from `next`. Leases in force
  // are kept; the policy sees the change at the next scheduling point.
  // Settings that need a restart (listen, data_dir, checkpoint_dir, tls,
  // heartbeat and profiling timings, profiles, the http.* limits) are left as
  // they are and named in the answer's "restart_needed" (http.* also each in
  // a reload_needs_restart warning). Throws InputError, changing nothing,
  // when `next` is not a valid config (a bad policy).
  nlohmann::json reload(const ServeConfig& next);

 private:
  // LeaseHost: what the executor reports (manager_runs.cc).
  std::unique_lock<std::mutex> lock() override { return std::unique_lock(mu_); }
  void wait(const Tickets& tickets) override;
  std::int64_t node_up(const NodeUp& node, Tickets& tickets) override;
  bool node_heard(const std::string& node, std::int64_t epoch, double now) override;
  Verdict report(const RunEvent& event, Tickets& tickets) override;
  std::vector<std::int64_t> revoking_on(const std::string& node) const override;
  std::optional<double> active_until(std::int64_t lease, const std::string& node) const override;
  void start_pending(Tickets& tickets) override { activate_pending(tickets); }
  // A node stopped answering: its runs end, their jobs wait until
  // `relaunch_at` (when the node's runs are fenced).
  void node_lost(const std::string& node, double relaunch_at, Tickets& tickets);
  // A launch on `node` failed for the node's own reason (RunEvent::node_fault):
  // counted; node_fault_limit in a row drain the node, saying why.
  void count_node_fault(const std::string& node, const std::string& why, Tickets& tickets);
  // A running run's report: its progress, profiling measurement, the verdict.
  Verdict run_running(const RunEvent& event, Tickets& tickets);

  struct JobEntry {
    StoredJob s;
    nlohmann::json command;
    std::map<std::string, std::string> env;
    std::int64_t lease = 0;        // current lease (pending or active), 0 = none
    std::size_t sched = kNone;     // index in state_.jobs
    std::string limits;            // what rank 0's agent holds the run to (its report)
    // Batch-size regimes as reported (manager_regimes.cc): the current batch
    // size (0: none reported), the job type the policy sees for it ("": the
    // submitted one) and {"batch_size", "iteration", "at"} per regime seen.
    std::int64_t batch_size = 0;
    std::string regime_type;
    nlohmann::json regimes = nlohmann::json::array();
    double not_before = 0.0;       // relaunchable from (a lost node's fence time)
    // Its submit record is durable (issue 30, H9): until then the job is
    // listed but neither planned, profiled nor sent to Slurm (launchable()),
    // so a submission answered 500 never runs, even when its row is
    // committed by a retry once space returns.
    bool stored = true;
  };
  struct NodeEntry {
    StoredNode s;
    double last_heard = 0.0;
    std::size_t model_index = kNone;  // index in model_->cluster.nodes when in the model
    int faults = 0;  // launches failed in a row for the node's reason (node_fault_limit)
  };
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  // What pending_reason needs of the cluster, computed once per request in
  // O(nodes + leases): then each job's reason costs O(GPU types).
  struct PendingContext {
    std::map<std::string, int> drained_pool, lost_pool;  // devices by GPU type
    std::map<std::string, int> free_pool;                // ready devices no lease holds, by type
    std::set<std::string> leased_jobs;                   // jobs some lease still names
  };

  double now() const { return clock_(); }
  JobEntry& job_by_id(const std::string& id);
  const JobEntry* find_job(const std::string& id) const;
  void check_owner(const Caller& c, const JobEntry& e) const;
  nlohmann::json job_json(const JobEntry& e, const PendingContext& ctx) const;
  nlohmann::json job_json(const JobEntry& e) const { return job_json(e, pending_context()); }
  std::uint64_t persist(const JobEntry& e);
  std::uint64_t persist(const StoredLease& l);
  std::uint64_t persist(const NodeEntry& n);

  // Profiles (manager_profiles.cc): the file's, the shared and unattributed
  // measured ones, and each tenant's own entry, merged into catalogue_.
  void rebuild_catalogue();
  bool file_has(const std::string& job_type, const std::string& gpu_type) const;
  // The catalogue's name of `job_type` for the tenant's jobs: its own entry
  // when the tenant measured the type, else the shared one.
  std::string profile_type(const std::string& tenant, const std::string& job_type) const;
  // Where the tenant's figure of the type on gpu_type comes from: file, own,
  // shared, unattributed or none.
  std::string profile_source(const std::string& tenant, const std::string& job_type,
                             const std::string& gpu_type) const;
  // A profiling run measured `rate` for e on gpu_type: stored as e's
  // tenant's and the run stopped, or refused (implausible: logged, not
  // stored, the run stopped as a failure of the job). Returns whether stored.
  bool record_profile(JobEntry& e, StoredLease& l, const std::string& gpu_type, double rate,
                      Tickets& tickets);
  // A policy run's progress against the rate it was planned at: a run
  // sustained more than 2x off is logged and counted (profile_mismatch).
  void cross_check(const JobEntry& e, const StoredLease& l, double iterations, double t);
  std::string profile_metrics() const;
  // The GPU types of ready nodes, kept in ready_types_: recomputed whenever a
  // node's state changes (registration, drain, loss).
  void refresh_ready_types();
  // Whether the tenant's jobs of the type have figures on every ready type.
  bool fully_profiled(const std::string& tenant, const std::string& job_type) const;
  // "queued" for a job whose type has figures on every ready type (for its
  // tenant), else "profiling".
  std::string waiting_state(const std::string& tenant, const std::string& job_type) const;
  bool schedulable(const JobEntry& e) const;
  // Whether the ready nodes of `type` can hold a gang of `workers` the way
  // the executor runs gangs: on one node, evenly spread, or anywhere.
  bool ready_type_holds(const std::string& type, int workers) const;
  // The most workers one job can have: the most devices of one GPU type
  // over the registered nodes, any state (0 when none is registered).
  int largest_gang() const;
  // Whether the registered nodes (any state) of some GPU type hold a gang
  // of `workers` spread evenly (holds_gang_evenly).
  bool registered_type_holds_evenly(int workers) const;
  PendingContext pending_context() const;
  // Why a job that is not running waits, squeue-style: {"reason", "detail"},
  // or null when it does not wait.
  nlohmann::json pending_reason(const JobEntry& e, const PendingContext& ctx) const;
  // The job's rate for a gang of `workers` on `type` (spread over nodes when
  // no ready node of the type holds it); NaN or 0 when it cannot run there.
  double gang_rate(const JobTypeProfile* p, const std::string& type, int workers) const;
  // Ids of the gang's parts not yet ended, by rank.
  std::vector<std::int64_t> part_ids(std::int64_t gang) const;
  // The GPU indices Slurm gave a run (kRunning's node_devices) become its
  // leases' devices (manager_slurm.cc).
  void adopt_slurm_devices(const StoredLease& started,
                           const std::vector<std::pair<std::string, std::vector<int>>>& given,
                           Tickets& tickets);
  // Ends a part whose run is gone (its node re-registered or was lost) and
  // revokes the rest of its gang.
  void lose_part(StoredLease& l, std::vector<std::uint64_t>& tickets);
  // lose_part() for every lease on `node`; the jobs that had one (no
  // duplicates, unknown jobs left out), for the caller to move on.
  std::vector<JobEntry*> lose_node_parts(const std::string& node,
                                         std::vector<std::uint64_t>& tickets);
  JobSpec spec_of(const JobEntry& e) const;

  // The scheduling core.
  void rebuild();
  void admit(JobEntry& e);
  void state_release(std::size_t sched_index);
  void state_finish(JobEntry& e);
  // A submission whose commit failed: ended as failed before it can run.
  void not_stored(const std::string& id, const std::string& why);
  // starts_only: mid-round starts (no lease is looked at for a stop).
  void apply_plan(const RoundPlan& plan, std::vector<std::uint64_t>& tickets,
                  bool starts_only = false);
  // Work-conserving rounds: devices free between scheduling points go to the
  // waiting jobs the policy picks next (RoundPolicy::midround), their leases
  // ending at the next point.
  void start_midround(std::vector<std::uint64_t>& tickets);
  // CPUs and memory (issue 15, Synergy live; manager_resources.cc). Whether
  // a plan's assignment keeps what the job holds (else a renewal on the same
  // devices is a new placement: a restart).
  bool same_grant(const Assignment& a, const Job& j) const;
  // The job starts under `a`: what it holds, and the rate multiplier of it.
  void take_grant(const Assignment& a, Job& j) const;
  // The part lease's share of what the job holds on the lease's node.
  void grant_part(const Job& j, StoredLease& l) const;
  // What a running job holds, read back from its part leases (rebuild).
  std::vector<NodeResources> held_by_parts(const std::vector<std::int64_t>& parts) const;
  // The job object's "cpus" and "memory_gb" (its current lease's, over its
  // parts; null without one) and "limits" (rank 0's agent's report).
  void add_grant_json(const JobEntry& e, nlohmann::json& j) const;
  // Batch-size regimes (issue 14, Shockwave live; manager_regimes.cc): rank
  // 0's report of the batch size the job now trains at. A change is a new
  // regime: recorded, and when the profiles know "<model> (batch size b)" on
  // every ready GPU type the policy sees the job as that type from the next
  // scheduling point (its rates change, as in the simulator when a regime
  // is revealed).
  void note_batch_size(JobEntry& e, std::int64_t batch, double iterations, double t);
  // The config's policy options, with solve=async for the policies that
  // declare it (shockwave: its MILPs run on their own thread, so that no
  // scheduling point waits for them; the config may still say otherwise).
  static RoundPolicyOptions live_policy_options(RoundPolicyOptions options);
  void add_regimes_json(const JobEntry& e, nlohmann::json& j) const;

  void start_profiling(std::vector<std::uint64_t>& tickets);
  // Quotas (issue 30, M3; config.h TenantQuotas). A tenant's, or none for a
  // tenant the manager does not know.
  const TenantQuotas& quotas_of(const std::string& tenant) const;
  // GPUs each tenant's leases hold now (pending, active, being revoked,
  // profiling ones too): what max_gpus_running bounds.
  std::map<std::string, std::int64_t> gpus_held() const;
  // max_gpus_running, in two steps around the policy's plan (and midround):
  // the waiting jobs that could not start within their tenant's quota are
  // set aside (out of state_.active, so that the policy gives their GPUs to
  // others, as for jobs held until their fence time) and put back after;
  // then any start that would still take a tenant past it (a policy that
  // plans from an older view of its jobs: shockwave's asynchronous solves)
  // is dropped from the plan (the job stays queued: the next
  // scheduling point may start it). Renewals and moves of running jobs are
  // kept.
  std::vector<std::size_t> set_aside_over_gpu_quota();
  void restore_set_aside(const std::vector<std::size_t>& aside);
  void hold_to_gpu_quotas(RoundPlan& plan);
  // A submission over one of the tenant's quotas: counted (/metrics) and
  // refused with ApiError 400 naming the tenant, the quota and the numbers.
  [[noreturn]] void refuse_over_quota(const std::string& tenant, const std::string& quota,
                                      const std::string& detail);
  // Ends one part lease (the job loses its lease when it was the job's gang)
  // and records its run's stop: `why` unless the caller set l.reason.
  std::uint64_t end_lease(StoredLease& l, std::string_view why = "");
  // Revokes every part of l's gang (pending and exited parts end at once).
  void revoke(StoredLease& l, std::vector<std::uint64_t>& tickets);
  // Backend slurm (manager_slurm.cc).
  void connect_slurm();     // the client, checked (before the store is opened)
  // The stored jobs handed to the Slurm executor, with the store's instance
  // tag (meta slurm_instance; "" = none yet: one is made and stored).
  void adopt_slurm_jobs(const std::string& stored_instance);
  // Serve as root on Slurm: every tenant's unix_user names a user that is
  // not root (InputError naming the field otherwise); tenants without one
  // are logged, their jobs run as root.
  void check_slurm_run_as(const ServeConfig& config) const;
  // The user a tenant's Slurm jobs run as ("": serve's own).
  std::string slurm_run_as(const std::string& tenant) const;
  void tick_slurm();  // one exchange with Slurm (outside mu_ but for its ends)
  ExecutorJob executor_job(const JobEntry& e) const;
  // `settling`: nodes neither offered nor lost (registering again).
  void sync_slurm_nodes(const std::vector<ExecutorNode>& seen,
                        const std::set<std::string>& settling, Tickets& tickets);
  void slurm_event(RunEvent event, Tickets& tickets);
  // Starts and revokes for the executor: agents at once (their starts wait
  // for their tickets), Slurm at the next tick, once durable.
  void to_executor(std::vector<RunStart> starts, std::vector<std::int64_t> revokes);
  // Drains (or undrains) a node: its leases revoked, `reason` kept while it
  // is drained. set_drained() for the admin; count_node_fault() too.
  void set_node_drained(NodeEntry& n, bool drained, const std::string& reason, Tickets& tickets);
  // Revokes every lease on the node (drained, or unusable in Slurm); their
  // jobs wait for their next lease.
  void evict_node(const std::string& node, Tickets& tickets);
  // A job the executor can start: once its submit record is durable; for
  // Slurm also once its held Slurm job exists.
  bool launchable(const JobEntry& e) const;
  // Ids of the leases being revoked.
  std::vector<std::int64_t> revoking_leases() const;
  void run_ended(StoredLease& l, const RunEvent& report, std::vector<std::uint64_t>& tickets);
  // The start the executor carries out for the gang of `gang` (its parts
  // activated, tickets the store tickets of their activation, or empty).
  RunStart run_start(std::int64_t gang, const std::map<std::int64_t, std::uint64_t>& tickets) const;
  void activate_pending(std::vector<std::uint64_t>& tickets);
  void settle(JobEntry& e, double t);

  ServeConfig config_;
  std::function<double()> clock_;
  std::unique_ptr<Store> store_;
  ProfileCatalogue file_profiles_;

  mutable std::mutex mu_;
  std::vector<JobEntry> jobs_;                 // by seq - 1
  std::map<std::string, std::size_t> job_index_;
  std::map<std::string, NodeEntry> nodes_;
  std::set<std::string> ready_types_;
  // Devices of ready nodes by GPU type, and the most of one ready node.
  std::map<std::string, int> ready_pool_, ready_largest_;
  std::map<std::string, std::vector<int>> ready_node_gpus_;  // each ready node's devices, by type
  std::map<std::int64_t, StoredLease> leases_;  // not yet ended
  std::map<std::string, std::size_t> tenant_index_;
  // One rule for tenants at start and at reload (issue 32, defect 2): the
  // config is the truth for every tenant it names (weight, token,
  // unix_user); a tenant made through the API and named in no config is
  // kept (stored with source "api"); any other stored tenant, the config's
  // of an earlier install or an earlier config included, authenticates
  // nobody. These are the names the current config gives.
  std::set<std::string> config_tenants_;
  std::set<std::string> api_tenants_;  // made through the API, in no config
  // The store's record of tenant `t` (meta "tenant:<name>").
  StoredMeta tenant_record(const TenantConfig& t) const;
  // Per-node agent tokens (node -> token), issued by the admin.
  std::map<std::string, std::string> node_tokens_;
  // Each tenant's slot, assigned once and persisted (meta "tenant_slot:"):
  // a root agent runs the tenant's jobs as uid --uid-base + slot, the same
  // on every node, so checkpoints on shared storage keep one owner.
  std::map<std::string, int> tenant_slot_;
  int slot_of(const std::string& tenant, std::vector<std::uint64_t>* tickets);
  std::vector<StoredProfile> measured_;  // one per (job type, GPU type, tenant)
  ProfileCatalogue catalogue_;
  // (job type, GPU type) -> the figure every tenant without its own uses:
  // corroborated by tenants ("shared") or stored before tenants were told
  // apart ("unattributed"). Rebuilt with the catalogue.
  struct SharedProfile {
    int workers = 1;
    double rate = 0.0;
    std::string source;
    int tenants = 0;  // that measured it ("shared")
  };
  std::map<std::pair<std::string, std::string>, SharedProfile> shared_;
  std::set<std::pair<std::string, std::string>> own_profiles_;  // (tenant, job type) measured
  // The cross-check of a policy run (by gang): its first progress report.
  struct RateWatch {
    double from = -1.0, from_t = 0.0;
    bool told = false;
  };
  std::map<std::int64_t, RateWatch> rate_watch_;
  std::uint64_t profiles_refused_ = 0, profile_mismatches_ = 0;
  std::int64_t next_lease_ = 1;
  double last_submitted_ = 0.0;
  double last_point_ = -1.0;  // the time of the last scheduling point

  std::unique_ptr<ClusterModel> model_;
  SchedulerState state_;
  std::unique_ptr<RoundPolicy> policy_;
  std::map<std::string, std::string> drain_reason_;  // node -> why (meta "drain_reason:")
  std::atomic<double> interval_{0.0};  // policy_->interval(), read without mu_
  std::atomic<double> next_point_{-1.0};  // run()'s next scheduling point (-1: none yet)
  std::vector<std::size_t> sched_to_job_;
  std::vector<std::pair<std::string, int>> flat_device_;  // model flat index -> (node, device id)
  std::map<std::pair<std::string, int>, DeviceRef> device_ref_;
  std::vector<std::size_t> held_;  // jobs_ indices waiting for not_before
  bool rebuild_needed_ = true;

  // The store's runs matching q, once what was decided so far is durable.
  std::vector<StoredRun> stored_runs(const RunQuery& q) const;
  // The job's runs as job() shows them ("runs"), by lease id.
  nlohmann::json job_runs(const std::string& id) const;
  // fairgpu_tenant_gpu_seconds_total at `t` by (tenant, GPU type); under mu_.
  std::map<std::pair<std::string, std::string>, double> gpu_seconds_total(double t) const;
  LogRelay log_relay_;  // tenants' log reads over the agents' heartbeats
  // fairgpu_tenant_gpu_seconds_total: device-seconds of the ended runs by
  // (tenant, GPU type), from the store at start and added at each run's
  // end; the runs in leases_ add theirs so far at each scrape.
  std::map<std::pair<std::string, std::string>, double> ended_gpu_seconds_;
  // Counters for /metrics.
  std::atomic<std::uint64_t> failed_rounds_ = 0;  // counted by run(), outside mu_
  std::uint64_t rounds_ = 0, submissions_ = 0, preemptions_ = 0, spread_launched_ = 0;
  std::uint64_t midround_starts_ = 0;
  std::uint64_t regime_changes_ = 0;
  std::uint64_t rebuilds_ = 0;  // model, state and policy made anew
  // Tenants' checkpoint bytes as last measured, and when (-1: never).
  std::map<std::string, std::int64_t> checkpoint_bytes_;
  double checkpoints_measured_at_ = -1.0;
  std::mutex measure_mu_;  // one measure at a time
  // Submissions refused by quota: (tenant, quota) -> count.
  std::map<std::pair<std::string, std::string>, std::uint64_t> quota_refusals_;
  double last_round_compute_ = 0.0;
  DurationHistogram round_compute_;  // fairgpu_round_compute_seconds

  // The status page's share history (manager_status.cc): one sample per
  // scheduling point, each tenant's share of the ready GPUs and the share
  // its weight entitles it to among the tenants with jobs. Bounded: at
  // kShareSamples samples the oldest pairs are merged (the history keeps
  // covering the uptime at a coarser step), and none older than
  // kShareHistoryS is kept.
  struct ShareSample {
    double t = 0.0;
    std::map<std::string, std::pair<double, double>> share;  // tenant -> (held, entitled)
  };
  static constexpr std::size_t kShareSamples = 720;
  static constexpr double kShareHistoryS = 6 * 3600.0;
  std::deque<ShareSample> share_history_;
  void record_shares(double t);  // under mu_

  // What runs the jobs: the agents (the only executor so far).
  std::unique_ptr<AgentExecutor> agents_;
  std::unique_ptr<slurm::SlurmClient> slurm_client_;
  std::unique_ptr<slurm::SlurmExecutor> slurm_;
  Executor* executor_ = nullptr;
  // Backend slurm: decided, not yet sent (tick_slurm sends them once durable).
  std::vector<RunStart> out_starts_;
  std::vector<std::int64_t> out_revokes_;
  std::vector<std::string> out_cancels_, to_admit_;
  std::map<std::string, bool> out_drains_;  // node -> drained: `fairgpu drain` for Slurm
  std::map<std::string, std::int64_t> slurm_ids_;  // by job; persisted as meta slurm_job:ID
  std::mutex slurm_io_;                            // one exchange with Slurm at a time
  std::uint64_t slurm_polls_ = 0, slurm_errors_ = 0;
  bool slurm_as_tenants_ = false;   // serve runs as root: jobs run as their tenants' unix_user
  bool slurm_unreachable_ = false;  // the last tick's poll failed (profiling runs not timed out)
  DurationHistogram slurm_exchange_;  // fairgpu_slurm_exchange_seconds

  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool stopping_ = false;
};

}  // namespace fairgpu::live
