// The scheduling core (docs/design.md §2), shared by the simulator and the live
// manager:
//
//   SchedulerState --> RoundPolicy::plan() --> RoundPlan --> Executor
//        ^                                                     |
//        +------------- progress, completions, failures -------+
//
// Time comes from a Clock; a policy never knows whether it is virtual.
// Every running job holds a lease with its own end time. At a scheduling point
// a policy decides only about jobs whose lease has ended and devices that are
// free: a job it names again on the same devices is renewed at no cost, one it
// leaves out is preempted, one it names on other devices restarts there
// (paying the restart overhead). Synchronous rounds (OEF, Gavel) are leases
// that all end together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fairgpu/cluster.h"
#include "fairgpu/policy_options.h"
#include "fairgpu/profile.h"
#include "fairgpu/sim_result.h"
#include "fairgpu/workload.h"

namespace fairgpu {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now() const = 0;  // seconds
};

class VirtualClock final : public Clock {
 public:
  double now() const override { return now_; }
  void set(double t) { now_ = t; }

 private:
  double now_ = 0.0;
};

struct DeviceRef {
  std::uint32_t node = 0;
  std::uint32_t gpu = 0;  // device index on the node
  friend bool operator==(DeviceRef a, DeviceRef b) { return a.node == b.node && a.gpu == b.gpu; }
  friend bool operator<(DeviceRef a, DeviceRef b) {
    return a.node != b.node ? a.node < b.node : a.gpu < b.gpu;
  }
};

// CPU cores and memory (GB) a job holds on one node (Synergy, specs/synergy.md §6).
struct NodeResources {
  std::uint32_t node = 0;
  double cpus = 0.0;
  double memory_gb = 0.0;
  friend bool operator==(const NodeResources&, const NodeResources&) = default;
};

// A cluster bound to a throughput profile: GPU types ordered slowest first
// (type 0 is the reference of every speedup), every type and job type checked
// to have figures. Built once per run by bind_model().
struct ClusterModel {
  Cluster cluster;             // node types re-indexed slowest first
  std::vector<int> capacity;   // GPUs per type
  std::vector<int> largest_node;  // GPUs of the biggest node of each type
  std::vector<std::size_t> node_first_device;  // flat device index of a node's GPU 0
  int total_gpus = 0;
  ProfileCatalogue profiles;   // the job types the workload uses, in first-use order
  double restart_overhead_s = 10.0;  // default when a profile gives none
};

// Orders the cluster's types by speed (geometric mean over the workload's job
// types of the 1-worker rate ratio to the first type) and checks that every
// job type of the workload and every cluster type has figures; also checks
// that no job's gang exceeds the cluster. Throws InputError naming the job or
// type otherwise.
ClusterModel bind_model(const Cluster& cluster, const ProfileCatalogue& catalogue,
                        const Workload& workload, double restart_overhead_s);

enum class JobState : std::uint8_t { kFuture, kQueued, kRunning, kFinished };

// The fields every round reads for each active job come first, in three
// cache lines of an aligned Job (the placer's, the executor's and the tenant
// rows' passes over ~10^4 jobs scattered over 10^6 are bound by these
// misses); the rest follows.
struct alignas(64) Job {
  // While running: the devices it holds.
  std::vector<DeviceRef> devices;
  // The fastest this gang can run on each type: on one node when a node of
  // that type has enough GPUs, else spread. What job-level policies plan with.
  std::vector<double> rate_best;
  std::size_t tenant = 0;    // index into SchedulerState::tenants
  int workers = 1;
  JobState state = JobState::kFuture;
  bool finish_at_lease_end = false;  // the placement's Assignment::finish_at_lease_end

  double run_start = 0.0;      // when the current run started
  double last_stop = 0.0;      // arrival or when it last stopped: starvation clock
  double lease_end = 0.0;
  double settled_at = 0.0;     // progress and GPU time are accounted up to here
  double overhead_left = 0.0;  // restart overhead still to pay (no progress)
  double rate = 0.0;           // of the current placement
  double work = 0.0;  // iterations
  double done = 0.0;

  std::size_t job_type = 0;  // index into ClusterModel::profiles.job_types
  std::size_t placement_type = 0;  // slowest type of the current placement
  double resource_multiplier = 1.0;      // part of `rate` due to `resources` (sensitivity)
  // rate_best on the slowest type where it is > 0 (Gavel measures 0 where a
  // model does not fit, e.g. ResNet-50 at batch 128 on several K80s): the
  // reference of this job's speedups and normalised throughput.
  double ref_rate = 0.0;
  std::vector<NodeResources> resources;  // CPU and memory held per node (resolved)
  std::uint32_t version = 0;   // bumped at every start and stop (stale-event check)

  std::size_t index = 0;     // in SchedulerState::jobs
  double weight = 1.0;
  double arrival = 0.0;
  // CPU cores and memory (GB) of the whole job: JobSpec's, or when not given
  // GPU-proportional, workers x the cluster's CPUs (memory) per GPU, so a job
  // without figures takes the same share of every resource (DRF then reduces
  // to GPU max-min). 0 when the cluster gives no CPUs (memory).
  double cpus = 0.0;
  double memory_gb = 0.0;

  // Rates of this job's gang (iterations/s), per GPU type: all workers on one
  // node, and spread over nodes. A placement runs at the slowest used type's
  // rate (straggler), the spread one when it spans nodes.
  std::vector<double> rate_one_node, rate_spread;
  bool runs_on(std::size_t type) const { return rate_best[type] > 0.0; }
  double restart_overhead_s = 10.0;

  std::size_t fair_class = 0;          // index into SchedulerState::fair_classes
  double fair_mark = 0.0, contention_mark = 0.0;  // the integrals when it arrived
  std::vector<double> time_on_type;    // seconds run on each type (by its slowest type)

  JobRecord record;  // the per-job outputs, filled as the run goes

  // Dynamic adaptation (fairgpu/adaptation.h); `regimes` is empty for a
  // static job. With regimes, work and done are epochs, every rate above is
  // epochs/s, and rate_* / ref_rate / job_type are the current regime's. The
  // executor enters the next regime at the epoch boundary where it begins,
  // and only then does a policy see it (regime, regime_starts, the rates).
  struct Regime {
    std::size_t job_type = 0;  // "<model> (batch size b)" in the model's profiles
    int batch_size = 0;
    double end_epoch = 0.0;    // cumulative epochs at its end
    std::vector<double> rate_one_node, rate_spread, rate_best;
    double ref_rate = 0.0;
  };
  AdaptationMode mode = AdaptationMode::kStatic;
  std::string model;  // "ResNet-18": the model whose batch size changes
  double samples_per_epoch = 0.0;
  // The whole profiled schedule. Its future is an oracle: only the policies'
  // `variant=artifact` (which reproduces the authors' code) may read past
  // `regime`.
  std::vector<Regime> regimes;
  std::size_t regime = 0;             // current
  std::vector<double> regime_starts;  // epoch at which each entered regime began (first: 0)
  bool adaptive() const { return !regimes.empty(); }

  bool active() const { return state == JobState::kQueued || state == JobState::kRunning; }
  double remaining() const { return work - done; }
  // Progress rate relative to the same gang on the slowest type it runs on
  // (one node if one is big enough): the normalised throughput of OEF §6.1.4 for this
  // job's current placement, in GPU-equivalents of type 0.
  double normalised_rate() const { return rate / ref_rate * workers; }
};

// device_owner of a device held outside the policy's jobs: the live manager's
// profiling runs (src/live/manager.cc). Never free to a plan.
inline constexpr std::int64_t kDeviceReserved = -2;

struct SchedulerState {
  const ClusterModel* model = nullptr;
  std::vector<TenantSpec> tenants;
  std::map<std::string, std::size_t, std::less<>> tenant_index;  // name -> tenants index
  std::vector<Job> jobs;
  std::vector<std::size_t> active;            // arrived and unfinished, by arrival
  std::vector<std::size_t> running;           // holding devices (kept by the executor)
  double active_weight = 0.0;                 // sums over `active`
  double active_workers = 0.0;
  // Integrals since the start of the run that every job's fair GPU service
  // (Astraea eq. 3-4) and contention (Shockwave eq. 9) are differences of:
  // jobs with the same gang and weight have the same fair share at any time,
  // so the run keeps one integral per (workers, weight) class, not per job.
  struct FairClass {
    int workers = 1;
    double weight = 1.0;
    double integral = 0.0;  // of min(workers, M * weight / active_weight) dt
  };
  std::vector<FairClass> fair_classes;
  double contention_integral = 0.0;  // of max(1, active_workers / M) dt
  std::vector<std::int64_t> device_owner;     // flat device -> job index, -1 when free
  std::vector<int> reserved;                  // per type: devices at kDeviceReserved
  double now = 0.0;
  // Something a policy's allocation depends on changed since the last plan:
  // an arrival, a completion or a throughput change.
  bool changed = true;
  // CPUs and memory summed over the model's nodes (add_job's GPU-proportional
  // defaults), summed at the first add_job rather than for every job.
  double node_cpus_total = kUnset, node_memory_gb_total = kUnset;

  std::size_t flat(DeviceRef d) const { return model->node_first_device[d.node] + d.gpu; }
  std::size_t type_of(DeviceRef d) const { return model->cluster.nodes[d.node].type; }
  bool lease_ended(const Job& j) const { return j.lease_end <= now + 1e-9; }
};

struct Assignment {
  std::size_t job = 0;
  std::vector<DeviceRef> devices;  // exactly `workers` devices
  double lease_end = 0.0;
  // CPU and memory held on each node of `devices`, one entry per node; empty:
  // GPU-proportional (the node's CPUs and memory x the share of its GPUs
  // held). A renewal on the same devices with other resources is a new
  // placement (a restart).
  std::vector<NodeResources> resources = {};
  // The rate multiplier of what the job holds; NaN: the executor reads it
  // from the job type's sensitivity table (the minimum over its nodes).
  // Set by policies that model speed their own way (synergy mode=compat).
  double rate_multiplier = kUnset;
  // Restart overhead of this placement if it is one; NaN: the job's.
  double restart_overhead_s = kUnset;
  // The job is recorded finished at its lease end, holding its devices to
  // then, when its work completes within the lease (Synergy's simulator).
  bool finish_at_lease_end = false;
};

// The resources an assignment holds, resolved: its own, or GPU-proportional.
std::vector<NodeResources> resolved_resources(const ClusterModel& model, const Assignment& a);
// The sensitivity multiplier of holding `held` with `devices`: the minimum
// over the nodes of the table's cell at the per-GPU CPUs and memory there; 1
// for a job type without a table or a node that declares no CPUs or memory.
double sensitivity_multiplier(const ClusterModel& model, std::size_t job_type,
                              const std::vector<DeviceRef>& devices,
                              const std::vector<NodeResources>& held);

struct RoundPlan {
  std::vector<Assignment> run;  // renewals and (re)starts
  bool recomputed = false;      // the policy re-solved its allocation
  double estimated_throughput = std::numeric_limits<double>::quiet_NaN();
};

// A policy that decides rounds. Share policies are wrapped into one
// (policy/share_round_policy.cc); time-sharing policies implement it directly.
// Jobs in workload order, all kFuture, with their rates and work resolved
// (duration_s -> iterations at the type-0 one-node rate); devices all free.
SchedulerState make_scheduler_state(const ClusterModel& model, const Workload& workload);

// Appends one job (kFuture) to the state, its rates and work resolved as
// make_scheduler_state does; its job type must be in the model's profiles.
// The live manager adds submissions this way. Returns its index.
std::size_t add_job(SchedulerState& state, const JobSpec& spec);
// Dynamic adaptation (src/core/adaptation_state.cc): add_job calls this for a
// spec with regimes: per-regime rates in epochs/s, work = epochs, isolated
// run time = sum over regimes; the job starts in regime 0.
void bind_adaptation(const ClusterModel& model, const JobSpec& spec, Job& job);
// Makes `regime` the job's current one (rates, job type); the executor calls
// it when the job reaches the regime's first epoch.
void enter_regime(Job& job, std::size_t regime);

// Moves the fair-service and contention integrals forward over
// [state.now, state.now + dt] with no arrival or completion inside. Does not
// move state.now. O(fair classes): the executor accounts each job's own
// progress and GPU time when it starts, stops or is settled.
void account_interval(SchedulerState& state, double dt);

// A job arrives (state.now): it joins `active`, queued.
void admit_job(SchedulerState& state, std::size_t job);
// A job leaves `active` (finished at state.now, or still active when a run
// stops): closes its fair-service and contention figures. The caller removes
// it from `active`/`running`.
void close_job(SchedulerState& state, Job& job);

class RoundPolicy {
 public:
  virtual ~RoundPolicy() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view level() const { return "job"; }
  // Interval between scheduling points, seconds.
  virtual double interval() const = 0;
  virtual RoundPlan plan(const SchedulerState& state) = 0;
  // Whether plan() reads the jobs' progress as settled at the scheduling
  // point: done, overhead_left, settled_at, time_on_type and the record's
  // accounting figures. When it does not, the simulator settles the round
  // that just ended on a second thread while plan() runs (the two touch
  // disjoint fields), which changes nothing in the outputs.
  virtual bool reads_progress() const { return true; }
  // Work-conserving rounds (docs/design.md §4, "Mid-round starts"): between
  // scheduling points, starts for waiting jobs on `free` devices (freed by a
  // completion or failure, or idle when a job arrived), each under a lease
  // ending at `round_end`, in the order the policy would pick them; the
  // round's plan is not re-solved. Default: none (the papers' rounds: GPUs
  // idle until the next scheduling point). Called after plan().
  virtual std::vector<Assignment> midround(const SchedulerState& state,
                                           const std::vector<DeviceRef>& free, double round_end) {
    (void)state, (void)free, (void)round_end;
    return {};
  }
  // Whether midround() may start anything (so callers skip gathering).
  virtual bool starts_midround() const { return false; }
  // Event-cost simulation (docs/design.md §5): what the policy's decision
  // is until the next event, asked right after a plan was carried out at
  // state.now. Until `until`, if no job arrives, finishes or changes rate,
  // plan() at every scheduling point would change nothing in the policy and
  // return only renewals of the running jobs whose lease has ended there,
  // each on its own devices to that point + `renewal_s` (so an empty plan
  // where none ended; NaN renewal_s: no lease may end before `until`), with
  // `recomputed` false and `estimated_throughput` as below. The simulator then does not call it
  // at those points and renews those leases itself. Default: plan at every
  // point.
  // A share policy's estimate stays in force at those points:
  // `estimated_throughput` is what its plan there would report (NaN: none).
  struct Stability {
    double until = -std::numeric_limits<double>::infinity();
    double renewal_s = std::numeric_limits<double>::quiet_NaN();
    double estimated_throughput = std::numeric_limits<double>::quiet_NaN();
  };
  virtual Stability stability(const SchedulerState& state) const {
    (void)state;
    return {};
  }
};

// What applies to a round policy besides its own `NAME:key=value` settings:
// the alias flags (`--level`, `--round`, `--lease`, `--tenant-demands`,
// `--themis-filter`, ...) and the serve config's `policy_options`. Only what
// every round policy has is a field (its level and its interval, also the
// live manager's scheduling interval); everything else is a key a policy
// declares in its own file (policy_options.h), set here as text. Order of
// precedence, lowest first: the policy's default, level and round_s, the
// settings, the specifier's own values.
struct RoundPolicyOptions {
  std::string level;     // key `level`: "" = the policy's default, "tenant" or "job"
  double round_s = 0.0;  // key `round`: 0 = the policy's default

  struct Setting {
    std::string policy;  // "" = every policy that declares `key`, else that policy only
    std::string key;
    std::string value;
  };
  std::vector<Setting> settings = {};  // later ones win
  // `key=value` for every policy that declares `key` (a policy that does not
  // ignores it), or with `policy` for that policy only (checked against its
  // keys whichever policy runs).
  void set(std::string key, std::string value, std::string policy = {}) {
    settings.push_back({std::move(policy), std::move(key), std::move(value)});
  }
};

// Round policies by specifier, `NAME` or `NAME:key=value[:key=value...]`
// (policy_options.h): every share policy (wrapped) and the time-sharing
// policies; the policy reports itself under the full specifier. Throws
// InputError for an unknown name, key or bad value.
std::unique_ptr<RoundPolicy> make_round_policy(std::string_view specifier,
                                               const RoundPolicyOptions& options);
std::vector<std::string> round_policy_names();
// The values a policy made by make_round_policy(specifier, options) runs
// with: every key it declares, defaults filled in (for provenance records).
// Throws InputError as make_round_policy does.
PolicyOptions resolve_round_policy_options(std::string_view specifier,
                                           const RoundPolicyOptions& options);

// For `fairgpu policies` and --help: every round policy, share policies first.
struct RoundPolicyInfo {
  std::string name;
  std::string description;  // one line
  bool share = false;       // a share policy (tenant or job level), else time-sharing
  std::vector<OptionSpec> keys;
};
std::vector<RoundPolicyInfo> round_policy_catalogue();

// Carries out plans and reports progress back into the state.
class Executor {
 public:
  virtual ~Executor() = default;
  // Stops jobs whose lease ended and are not in the plan, renews or (re)starts
  // the others. state.now is the scheduling point.
  virtual void apply(const RoundPlan& plan, SchedulerState& state) = 0;
  // Runs until `until`; completions free their devices at once and set
  // state.changed.
  virtual void advance(SchedulerState& state, double until) = 0;
};

// Checks a plan against the state before it is carried out: known jobs, each
// once, right gang size, no device double-booked (with each other or with
// jobs whose lease still runs), no change to a job whose lease has not ended.
// Throws std::logic_error: a failure is a policy bug, never bad input.
void validate_plan(const RoundPlan& plan, const SchedulerState& state);

}  // namespace fairgpu
