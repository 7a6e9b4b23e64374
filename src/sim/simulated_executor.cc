// The simulated executor (DESIGN §5): carries out round plans on virtual
// devices and moves jobs forward event by event inside a round, so a job that
// finishes mid-round frees its GPUs at its exact finish time.
#include <algorithm>
#include <cmath>
#include <limits>

#include "fairgpu/simulator.h"

namespace fairgpu {
namespace {

void release(SchedulerState& s, Job& j) {
  for (DeviceRef d : j.devices) s.device_owner[s.flat(d)] = -1;
  j.devices.clear();
  j.rate = 0.0;
  j.overhead_left = 0.0;
  j.last_stop = s.now;
}

// The placement's rate: every worker runs at the slowest used type's speed
// (straggler); workers on more than one node pay the profile's cross-node
// rate.
double placement_rate(const SchedulerState& s, const Job& j, bool* cross_type, bool* cross_node) {
  std::size_t slowest = s.type_of(j.devices.front()), fastest = slowest;
  bool spread = false;
  for (DeviceRef d : j.devices) {
    slowest = std::min(slowest, s.type_of(d));
    fastest = std::max(fastest, s.type_of(d));
    spread |= d.node != j.devices.front().node;
  }
  *cross_type = slowest != fastest;
  *cross_node = spread;
  return spread ? j.rate_spread[slowest] : j.rate_one_node[slowest];
}

bool same_devices(std::vector<DeviceRef> a, std::vector<DeviceRef> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

}  // namespace

void SimulatedExecutor::apply(const RoundPlan& plan, SchedulerState& s) {
  std::vector<const Assignment*> by_job(s.jobs.size(), nullptr);
  for (const Assignment& a : plan.run) by_job[a.job] = &a;

  // Free first: jobs whose lease ended and that were left out (preempted) or
  // moved (migrated: checkpoint here, restart there).
  for (std::size_t i : s.active) {
    Job& j = s.jobs[i];
    if (j.state != JobState::kRunning || !s.lease_ended(j)) continue;
    const Assignment* a = by_job[i];
    if (a && same_devices(a->devices, j.devices)) continue;
    release(s, j);
    j.state = JobState::kQueued;
    if (!a) ++j.record.preemptions;
  }
  for (const Assignment& a : plan.run) {
    Job& j = s.jobs[a.job];
    j.lease_end = a.lease_end;
    if (j.state == JobState::kRunning) continue;  // renewed: same devices, no cost
    j.devices = a.devices;
    for (DeviceRef d : j.devices) s.device_owner[s.flat(d)] = static_cast<std::int64_t>(a.job);
    bool cross_type = false, cross_node = false;
    j.rate = placement_rate(s, j, &cross_type, &cross_node);
    j.record.cross_type_placements += cross_type;
    j.record.cross_node_placements += cross_node;
    j.overhead_left = j.restart_overhead_s;
    j.run_start = s.now;
    if (std::isnan(j.record.first_start))
      j.record.first_start = s.now;
    else
      ++j.record.restarts;
    j.state = JobState::kRunning;
  }
}

void SimulatedExecutor::advance(SchedulerState& s, double until) {
  const std::size_t k = s.model->cluster.num_types();
  while (s.now < until) {
    double next = until;
    for (std::size_t i : s.active) {
      const Job& j = s.jobs[i];
      if (j.state == JobState::kRunning)
        next = std::min(next, s.now + j.overhead_left + j.remaining() / j.rate);
    }
    next = std::max(next, s.now);
    const double dt = next - s.now;
    if (sums_ && dt > 0.0) {
      for (std::size_t i : s.active) {
        const Job& j = s.jobs[i];
        if (j.state != JobState::kRunning) continue;
        sums_->busy_gpu_seconds += j.workers * dt;
        if (!sums_->tenant_throughput.empty()) {
          double productive = std::max(0.0, dt - j.overhead_left);
          sums_->tenant_throughput[j.tenant] += productive * j.normalised_rate();
          for (DeviceRef d : j.devices) sums_->tenant_gpus[j.tenant * k + s.type_of(d)] += dt;
        }
      }
    }
    account_interval(s, dt);
    s.now = next;
    // Completions at `next` (a relative tolerance absorbs round-off in the
    // finish-time arithmetic).
    bool any = false;
    for (std::size_t i : s.active) {
      Job& j = s.jobs[i];
      if (j.state != JobState::kRunning || j.remaining() > 1e-9 * std::max(1.0, j.work)) continue;
      j.done = j.work;
      j.record.done = j.work;
      j.record.finish = s.now;
      j.record.contention_avg /= std::max(s.now - j.arrival, 1e-12);
      release(s, j);
      j.state = JobState::kFinished;
      any = true;
    }
    if (any) {
      s.changed = true;
      std::erase_if(s.active, [&](std::size_t i) { return s.jobs[i].state == JobState::kFinished; });
    }
  }
}

}  // namespace fairgpu
