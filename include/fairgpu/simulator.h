// The trace-driven simulator (docs/design.md §5): the scheduling core driven by a
// virtual clock and the simulated executor. Round-based with events inside a
// round: a job that finishes mid-round frees its GPUs at once, and the
// policy's mid-round starts (RoundPolicy::midround) may give them, or idle
// GPUs an arrival could use, to waiting jobs at that instant; otherwise
// arrivals wait for the next scheduling point. A (re)started job loses its
// restart overhead, a renewed lease loses nothing.
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <queue>
#include <vector>
#include <string>

#include "fairgpu/scheduler.h"
#include "fairgpu/sim_result.h"

namespace fairgpu {

struct SimOptions {
  // Stop at this time even if jobs remain (they are reported unfinished).
  double horizon_s = std::numeric_limits<double>::infinity();
  // Record per-tenant series in every RoundSample (off for huge benchmarks).
  bool tenant_series = true;
  // Store the per-tenant series in RoundSample's sparse form (only tenants
  // with something in the round): what `fairgpu simulate` uses, so memory
  // follows active tenants, not all tenants, per round.
  bool sparse_tenant_series = false;
  // When set, every round goes to this sink as it is made and
  // SimResult::rounds stays empty (SimResult::rounds_streamed): memory then
  // does not grow with the number of rounds. Not owned.
  RoundSink* round_sink = nullptr;
  // Called after every round with the fraction of jobs finished (for a
  // progress line); may be empty.
  std::function<void(double fraction_done, double sim_time)> on_progress;
};

// The simulated Executor: jobs progress at their placement's rate (slowest
// used type, cross-node rate when spread), restart overhead first.
class SimulatedExecutor final : public Executor {
 public:
  // Per-tenant sums over the current round (reset by the simulator).
  struct RoundSums {
    double busy_gpu_seconds = 0.0;
    double throughput = 0.0;                // normalised iterations of all jobs, integrated
    std::vector<int> idle_by_type;          // idle devices per type, kept current by completions
    std::vector<double> tenant_throughput;  // normalised iterations, integrated
    std::vector<double> tenant_gpus;        // tenant-major x type, GPU-seconds
    // CPU core-seconds and memory GB-seconds held, and used (held, capped per
    // node at the job type's best-case demand where it has a sensitivity table).
    double cpu_seconds = 0.0, memory_gb_seconds = 0.0;
    double cpu_used_seconds = 0.0, memory_gb_used_seconds = 0.0;
    // Devices of jobs that finished, when collect_freed (mid-round starts).
    bool collect_freed = false;
    std::vector<DeviceRef> freed;
  };
  explicit SimulatedExecutor(RoundSums* sums) : sums_(sums) {}
  void apply(const RoundPlan& plan, SchedulerState& state) override;
  // Mid-round starts (RoundPolicy::midround): waiting jobs on free devices;
  // no running job is looked at.
  void start(const std::vector<Assignment>& starts, SchedulerState& state);
  // Completions come from a heap of finish times, so a round costs
  // O(completions log n + classes), not O(running jobs) per event; running
  // jobs' progress is accounted lazily (settle).
  void advance(SchedulerState& state, double until) override;
  // advance() in two steps, for an event loop that calls it once per event:
  // run_events() finishes jobs (returning how many) but leaves them in
  // state.running and state.active (state == kFinished) until compact(),
  // which erases them, so an event costs O(its completions), not
  // O(active jobs). settle_all() compacts first.
  std::size_t run_events(SchedulerState& state, double until);
  void compact(SchedulerState& state);
  // Brings every running job's progress, GPU time and the round sums up to
  // state.now (the simulator calls it at the end of every round).
  void settle_all(SchedulerState& state);
  // When the next completion may happen (infinity when nothing runs); a
  // job stopped since may make it a step with nothing to do.
  double next_finish() const;

 private:
  void settle(SchedulerState& state, Job& job, double t);
  void start_one(const Assignment& a, SchedulerState& state);
  // Queues job `index`'s next event: its finish or the end of its regime.
  void push_finish(const Job& job, std::size_t index, double now);
  struct Finish {
    double t;
    std::size_t job;
    std::uint32_t version;
    bool operator>(const Finish& o) const { return t != o.t ? t > o.t : job > o.job; }
  };
  RoundSums* sums_;
  std::size_t uncompacted_ = 0;  // jobs finished since the last compact()
  std::vector<const Assignment*> by_job_;  // apply(): the plan's entry of each job
  std::priority_queue<Finish, std::vector<Finish>, std::greater<Finish>> finishes_;
};

// Adds `dt` seconds of what `job` holds (CPUs, memory; held and used) to `sums`.
void add_resource_seconds(const ClusterModel& model, const Job& job, double dt,
                          SimulatedExecutor::RoundSums& sums);

// Runs `workload` on `model` under `policy`. Deterministic: the same inputs
// give the same result (wall-clock fields aside).
SimResult simulate(const ClusterModel& model, const Workload& workload, RoundPolicy& policy,
                   const SimOptions& options = {});

}  // namespace fairgpu
