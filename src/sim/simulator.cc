// The simulator's event loop (DESIGN §5): scheduling points every policy
// interval on a virtual clock; a job joins the state when it arrives and the
// policy first sees it at the next scheduling point; idle stretches with
// nothing active are skipped to the scheduling point at or after the next
// arrival, keeping the interval grid.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "fairgpu/simulator.h"

namespace fairgpu {

SimResult simulate(const ClusterModel& model, const Workload& workload, RoundPolicy& policy,
                   const SimOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  SchedulerState state = make_scheduler_state(model, workload);
  const std::size_t k = model.cluster.num_types();
  const std::size_t n_tenants = state.tenants.size();
  const double interval = policy.interval();
  if (!(interval > 0.0)) throw std::logic_error("policy interval must be > 0");

  SimResult out;
  out.policy = std::string(policy.name());
  out.level = std::string(policy.level());
  out.round_s = interval;
  out.gpu_types = model.cluster.gpu_types;
  out.capacity = model.capacity;
  out.tenants = state.tenants;

  SimulatedExecutor::RoundSums sums;
  SimulatedExecutor executor(&sums);
  VirtualClock clock;

  std::size_t next_job = 0;  // jobs are sorted by arrival
  const std::size_t n = state.jobs.size();
  const double t0 = n ? state.jobs.front().arrival : 0.0;
  out.start = t0;
  std::size_t finished = 0;
  std::size_t idle_points = 0;  // scheduling points in a row with work waiting and none running

  // Jobs join the state when they arrive (their fair share and contention
  // count from then); the policy sees them at the next scheduling point.
  auto admit_arrivals = [&] {
    for (; next_job < n && state.jobs[next_job].arrival <= state.now + 1e-9; ++next_job)
      admit_job(state, next_job);
  };
  auto run_until = [&](double until) {
    while (state.now < until) {
      double stop = next_job < n ? std::min(until, state.jobs[next_job].arrival) : until;
      const std::size_t before = state.active.size();
      executor.advance(state, std::max(stop, state.now));
      finished += before - state.active.size();
      admit_arrivals();
    }
  };

  state.now = t0;
  admit_arrivals();
  double t = t0;
  while (t < options.horizon_s) {
    if (state.active.empty()) {
      if (next_job == n) break;
      // Nothing to do until the next arrival: jump to the first scheduling
      // point after it (the grid stays t0 + i * interval).
      double steps = std::ceil((state.jobs[next_job].arrival - t0) / interval - 1e-9);
      double next_point = std::max(t + interval, t0 + steps * interval);
      run_until(std::min(next_point, options.horizon_s));
      t = next_point;
      continue;
    }
    clock.set(t);
    state.now = clock.now();

    const auto plan_start = std::chrono::steady_clock::now();
    RoundPlan plan = policy.plan(state);
    const double compute =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - plan_start).count();
    validate_plan(plan, state);
    state.changed = false;
    executor.apply(plan, state);

    RoundSample sample;
    sample.start = t;
    sample.compute_seconds = compute;
    sample.recomputed = plan.recomputed;
    sample.estimated_throughput = plan.estimated_throughput;
    sample.active_jobs = static_cast<int>(state.active.size());
    sums = {};
    if (options.tenant_series) {
      sums.tenant_throughput.assign(n_tenants, 0.0);
      sums.tenant_gpus.assign(n_tenants * k, 0.0);
      sample.tenant_active_jobs.assign(n_tenants, 0);
      for (std::size_t i : state.active) ++sample.tenant_active_jobs[state.jobs[i].tenant];
    }
    idle_points = state.running.empty() ? idle_points + 1 : 0;
    if (idle_points > 100000)
      throw std::logic_error(fmt::format("policy {} left {} jobs waiting on an idle cluster for "
                                         "100000 scheduling points",
                                         policy.name(), state.active.size()));

    const double until = std::min(t + interval, options.horizon_s);
    run_until(until);
    executor.settle_all(state);

    sample.end = until;
    sample.busy_gpu_seconds = sums.busy_gpu_seconds;
    if (options.tenant_series) {
      const double len = until - t;
      for (double& v : sums.tenant_throughput) v /= len;
      for (double& v : sums.tenant_gpus) v /= len;
      sample.tenant_throughput = std::move(sums.tenant_throughput);
      sample.tenant_gpus = std::move(sums.tenant_gpus);
    }
    out.rounds.push_back(std::move(sample));
    if (options.on_progress) options.on_progress(n ? double(finished) / double(n) : 1.0, until);
    t = until;
  }

  out.end = t0;
  for (Job& j : state.jobs) {
    if (!std::isnan(j.record.finish)) {
      out.end = std::max(out.end, j.record.finish);
    } else if (j.active()) {
      close_job(state, j);  // unfinished at the horizon: its figures end there
    }
  }
  if (finished < n) out.end = std::max(out.end, state.now);
  out.jobs.reserve(n);
  for (Job& j : state.jobs) out.jobs.push_back(std::move(j.record));
  out.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return out;
}

}  // namespace fairgpu
