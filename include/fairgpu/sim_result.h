// What one simulation run produced, before any metric is computed: one record
// per job and one sample per scheduling round. src/report turns it into the
// metrics of docs/design.md §6 and the CSV/JSON/table outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fairgpu/workload.h"

namespace fairgpu {

struct JobRecord {
  std::string id, tenant, job_type;
  int workers = 1;
  double weight = 1.0;
  double arrival = 0.0;
  double first_start = kUnset;  // NaN: never ran
  double finish = kUnset;       // NaN: did not finish before the simulation ended
  double work = 0.0;            // iterations required
  double done = 0.0;            // iterations done (== work when finished)
  // GPUs held x seconds while running, restart overhead included (Astraea eq. 1-2).
  double attained_gpu_seconds = 0.0;
  // Astraea eq. 3-4 over [arrival, finish or end]: integral of
  // min(workers, M * weight / sum of active jobs' weights) dt.
  double fair_gpu_seconds = 0.0;
  // Restart overhead actually paid, in seconds of holding GPUs without
  // progress: each start pays min(restart overhead, time until it stops).
  double overhead_seconds = 0.0;
  // Run time alone on the cluster's capacity-weighted average GPU: work /
  // sum_t (m_t / M) rate(t, workers), on one node when a node of t is big enough.
  double exclusive_s = 0.0;
  // Shockwave eq. 9's N_avg(j): time average over [arrival, finish or end] of
  // max(1, GPUs requested by active jobs / M).
  double contention_avg = 1.0;
  int restarts = 0;               // starts after the first (each pays the restart overhead)
  int preemptions = 0;            // leases revoked before the job finished
  int cross_type_placements = 0;  // placements whose workers spanned GPU types
  int cross_node_placements = 0;  // placements whose workers spanned nodes
  // Integral over its run time of the CPU/memory sensitivity multiplier
  // (Synergy): / run seconds = the mean speedup its CPUs and memory gave it.
  double multiplier_seconds = 0.0;
};

struct RoundSample {
  double start = 0.0, end = 0.0;  // [start, end) of the round (or scheduling interval)
  // Scheduling points in [start, end): 1, or a run of identical stable
  // rounds with no event inside, simulated and recorded as one (the
  // simulator's kRunLengthMin; docs/design.md §5). Every other field is then
  // over the whole run (sums) or its time average, as for one long round;
  // the points after the first are skipped ones (no compute, no re-solve).
  std::int64_t rounds = 1;
  double compute_seconds = 0.0;   // wall time the policy took at this scheduling point
  bool recomputed = false;        // the share policy re-solved its allocation here
  int active_jobs = 0;            // arrived and unfinished at start
  double busy_gpu_seconds = 0.0;  // over the round; mid-round completions free GPUs at once
  // Contention (docs/design.md §6): the part of the round in which some active job
  // waited (from its start if a job waited after the plan, else from the
  // first arrival inside it), and the normalised throughput (sum over all
  // tenants, integrated) and busy GPU-seconds within that part.
  double contended_s = 0.0;
  double throughput_integral = 0.0;  // normalised throughput of all tenants over the round
  double contended_throughput = 0.0;
  double contended_busy_gpu_seconds = 0.0;
  // Work-conservation violations: GPU-seconds idle while a waiting job could
  // have used them (see idle_usable_by_waiting()), over the whole round, and
  // the GPUs so idle right after the plan was carried out.
  double idle_waiting_gpu_seconds = 0.0;
  int plan_idle_waiting_gpus = 0;
  // Per tenant (index into SimResult::tenants), time-averaged over the round:
  // normalised throughput = sum over running workers of the speedup of the GPU
  // type used (OEF §6.1.4), and GPUs held per type (tenant-major, num_types each).
  std::vector<double> tenant_throughput;
  std::vector<double> tenant_gpus;
  // Per tenant: its jobs arrived and unfinished at start (the report's Jain's
  // index averages a tenant's throughput over the rounds in which this is > 0).
  std::vector<int> tenant_active_jobs;
  // The same three in sparse form (SimOptions::sparse_tenant_series), so a
  // trace with thousands of tenants and few active at a time keeps per-round
  // memory small: only tenants with an active job, throughput or a GPU held,
  // ascending; the dense vectors above are then empty. for_each_tenant()
  // reads either form.
  bool sparse = false;
  std::vector<std::uint32_t> sparse_tenants = {};
  std::vector<int> sparse_active_jobs = {};
  std::vector<double> sparse_throughput = {};
  std::vector<double> sparse_gpus = {};  // entry-major x num_types
  // (Astraea eq. 7's Demand_j(t) is not sampled here: the report integrates
  // it exactly from the jobs' arrival and finish.)
  // Share policies: sum_l W_l . x_l of the fractional allocation in force
  // (OEF §6.1.4's "estimated" throughput); NaN for other policies.
  double estimated_throughput = kUnset;
  // CPU cores and memory (GB) held by running jobs, time-averaged over the
  // round, and the part they use (held, capped per node at the job type's
  // best-case demand where it has a sensitivity table).
  double cpus_allocated = 0.0, memory_gb_allocated = 0.0;
  double cpus_used = 0.0, memory_gb_used = 0.0;
};

// Calls f(tenant, active_jobs, throughput, gpus) for the tenants of a round:
// every tenant in the dense form, the listed ones in the sparse form (the
// others had nothing: no active job, no throughput, no GPU). `gpus` points at
// num_types time-averaged GPU counts.
template <class F>
void for_each_tenant(const RoundSample& round, std::size_t num_types, F&& f) {
  if (round.sparse) {
    for (std::size_t i = 0; i < round.sparse_tenants.size(); ++i)
      f(std::size_t{round.sparse_tenants[i]}, round.sparse_active_jobs[i],
        round.sparse_throughput[i], round.sparse_gpus.data() + i * num_types);
    return;
  }
  for (std::size_t t = 0; t < round.tenant_throughput.size(); ++t)
    f(t, round.tenant_active_jobs[t], round.tenant_throughput[t],
      round.tenant_gpus.data() + t * num_types);
}

struct SimResult;
class RoundDigest;  // fairgpu/sim_report.h

// Takes a run's rounds as the simulator makes them (SimOptions::round_sink),
// so a long run need not keep them: begin() with the run's setup (policy,
// GPU types, capacity, tenants, start) before the first round, add() once
// per round in time order, end() with the finished result (jobs, end).
class RoundSink {
 public:
  virtual ~RoundSink() = default;
  virtual void begin(const SimResult& setup) = 0;
  virtual void add(const RoundSample& round) = 0;
  virtual void end(const SimResult& result) = 0;
};

struct SimResult {
  std::string policy, level;  // level: "tenant" | "job"
  double round_s = 0.0;       // scheduling interval
  std::vector<std::string> gpu_types;  // slowest first
  std::vector<int> capacity;           // GPUs per type
  std::vector<TenantSpec> tenants;
  std::vector<JobRecord> jobs;         // in workload order
  std::vector<RoundSample> rounds;
  // True when the rounds went to a RoundSink instead of `rounds` (then
  // empty); the metrics then read `digest`, which the caller attaches (the
  // sink it gave, or the digest that sink fed).
  bool rounds_streamed = false;
  std::shared_ptr<const RoundDigest> digest;
  double start = 0.0;  // first arrival
  double end = 0.0;    // last finish (or when the simulation stopped)
  double wall_seconds = 0.0;

  std::size_t num_types() const { return gpu_types.size(); }
  int total_gpus() const;
};

}  // namespace fairgpu
