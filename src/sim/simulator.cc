// The simulator's event loop (DESIGN §5): scheduling points every policy
// interval on a virtual clock; arrivals are admitted at the next scheduling
// point; idle stretches with nothing active are skipped to the scheduling
// point at or after the next arrival, keeping the interval grid.
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
  double t = t0;
  std::size_t finished = 0;
  std::size_t idle_points = 0;  // scheduling points in a row with work waiting and none running

  while (t < options.horizon_s) {
    clock.set(t);
    state.now = clock.now();
    for (; next_job < n && state.jobs[next_job].arrival <= t + 1e-9; ++next_job) {
      Job& j = state.jobs[next_job];
      j.state = JobState::kQueued;
      state.active.push_back(next_job);
      state.changed = true;
    }
    if (state.active.empty()) {
      if (next_job == n) break;
      // Nothing to do until the next arrival: jump to the first scheduling
      // point at or after it.
      double steps = std::ceil((state.jobs[next_job].arrival - t0) / interval - 1e-9);
      t = std::max(t + interval, t0 + steps * interval);
      continue;
    }

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
    bool running = std::any_of(state.active.begin(), state.active.end(), [&](std::size_t i) {
      return state.jobs[i].state == JobState::kRunning;
    });
    idle_points = running ? 0 : idle_points + 1;
    if (idle_points > 100000)
      throw std::logic_error(fmt::format("policy {} left {} jobs waiting on an idle cluster for "
                                         "100000 scheduling points",
                                         policy.name(), state.active.size()));

    const double until = std::min(t + interval, options.horizon_s);
    const std::size_t active_before = state.active.size();
    executor.advance(state, until);
    finished += active_before - state.active.size();

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
    } else if (j.state != JobState::kFuture) {
      // Unfinished at the horizon: its contention integral ends there.
      j.record.contention_avg /= std::max(state.now - j.arrival, 1e-12);
    } else {
      j.record.contention_avg = 1.0;
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
