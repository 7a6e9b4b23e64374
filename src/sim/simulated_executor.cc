// The simulated executor (docs/design.md §5): carries out round plans on virtual
// devices and moves jobs forward event by event inside a round, so a job that
// finishes mid-round frees its GPUs at its exact finish time. A job's finish
// time is fixed when it starts (its rate holds until its next stop), so
// completions come off a heap and progress is accounted lazily.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/prefetch.h"
#include "fairgpu/simulator.h"

namespace fairgpu {
namespace {

void release(SchedulerState& s, Job& j) {
  for (DeviceRef d : j.devices) s.device_owner[s.flat(d)] = -1;
  j.devices.clear();
  j.rate = 0.0;
  j.overhead_left = 0.0;
  j.last_stop = s.now;
  ++j.version;
}

// The placement's rate: every worker runs at the slowest used type's speed
// (straggler); workers on more than one node pay the profile's cross-node
// rate.
double placement_rate(const SchedulerState& s, Job& j, bool* cross_type, bool* cross_node) {
  std::size_t slowest = s.type_of(j.devices.front()), fastest = slowest;
  bool spread = false;
  for (DeviceRef d : j.devices) {
    slowest = std::min(slowest, s.type_of(d));
    fastest = std::max(fastest, s.type_of(d));
    spread |= d.node != j.devices.front().node;
  }
  *cross_type = slowest != fastest;
  *cross_node = spread;
  j.placement_type = slowest;
  return spread ? j.rate_spread[slowest] : j.rate_one_node[slowest];
}

// Where the job's current run segment ends: its work, or for a job with a
// batch-size schedule the end of its current regime if that comes first.
double segment_end(const Job& j) {
  return j.adaptive() ? std::min(j.work, j.regimes[j.regime].end_epoch) : j.work;
}

bool same_devices(const std::vector<DeviceRef>& a, const std::vector<DeviceRef>& b) {
  if (a.size() != b.size()) return false;
  if (a == b) return true;  // a renewal names them in the same order: no copies
  std::vector<DeviceRef> sa = a, sb = b;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  return sa == sb;
}

// resolved_resources(model, a) == held, without building the former (this
// runs for every renewal every round): the plan's resources, or each node's
// CPUs and memory in proportion to the plan's GPUs there, by ascending node.
bool same_resolved_resources(const ClusterModel& model, const Assignment& a,
                             const std::vector<NodeResources>& held) {
  if (!a.resources.empty()) return a.resources == held;
  std::size_t counted = 0;
  for (std::size_t r = 0; r < held.size(); ++r) {
    if (r > 0 && !(held[r - 1].node < held[r].node)) return false;
    int gpus = 0;
    for (DeviceRef d : a.devices) gpus += d.node == held[r].node;
    if (gpus == 0) return false;
    counted += static_cast<std::size_t>(gpus);
    const Node& n = model.cluster.nodes[held[r].node];
    const double share = n.gpus > 0 ? double(gpus) / n.gpus : 0.0;
    if (!(held[r] == NodeResources{held[r].node, n.cpus * share, n.memory_gb * share}))
      return false;
  }
  return counted == a.devices.size();
}

}  // namespace

void SimulatedExecutor::apply(const RoundPlan& plan, SchedulerState& s) {
  // Plan entries by job, in a table kept across rounds (sized to the jobs
  // once) and cleared again below: a round costs O(plan), not O(all jobs).
  by_job_.resize(s.jobs.size(), nullptr);
  for (const Assignment& a : plan.run) by_job_[a.job] = &a;

  // Free first: jobs whose lease ended and that were left out (preempted) or
  // moved (migrated: checkpoint here, restart there). Those leave `running`
  // in the same pass (the others keep their order).
  std::size_t kept = 0;
  for (std::size_t r = 0; r < s.running.size(); ++r) {
    prefetch_ahead(s.jobs, s.running, r, &Job::lease_end, &Job::devices, &Job::resources);
    if (r + 4 < s.running.size()) {  // its vectors, the job now in cache
      const Job& ahead = s.jobs[s.running[r + 4]];
      __builtin_prefetch(ahead.devices.data());
      __builtin_prefetch(ahead.resources.data());
      __builtin_prefetch(&by_job_[s.running[r + 4]]);
    }
    const std::size_t i = s.running[r];
    s.running[kept++] = i;
    Job& j = s.jobs[i];
    if (j.state != JobState::kRunning) {  // finished, not compacted yet
      --kept;
      continue;
    }
    if (!s.lease_ended(j)) continue;
    const Assignment* a = by_job_[i];
    // Same devices and the same CPUs and memory: a renewal.
    if (a && same_devices(a->devices, j.devices) &&
        same_resolved_resources(*s.model, *a, j.resources) &&
        (std::isnan(a->rate_multiplier) || a->rate_multiplier == j.resource_multiplier)) {
      if (a->finish_at_lease_end) {  // the lease end moved: so does the finish
        settle(s, j, s.now);
        ++j.version;
        j.lease_end = a->lease_end;
        push_finish(j, i, s.now);
      }
      continue;
    }
    settle(s, j, s.now);
    release(s, j);
    j.state = JobState::kQueued;
    if (!a) ++j.record.preemptions;
    --kept;
  }
  s.running.resize(kept);
  for (std::size_t r = 0; r < plan.run.size(); ++r) {
    if (r + 8 < plan.run.size()) {
      const Job& ahead = s.jobs[plan.run[r + 8].job];
      __builtin_prefetch(&ahead.lease_end);
      __builtin_prefetch(&ahead.state);
    }
    start_one(plan.run[r], s);
  }
  for (const Assignment& a : plan.run) by_job_[a.job] = nullptr;
}

void SimulatedExecutor::start(const std::vector<Assignment>& starts, SchedulerState& s) {
  for (const Assignment& a : starts) start_one(a, s);
}

void SimulatedExecutor::start_one(const Assignment& a, SchedulerState& s) {
  Job& j = s.jobs[a.job];
  j.lease_end = a.lease_end;
  j.finish_at_lease_end = a.finish_at_lease_end;
  if (j.state == JobState::kRunning) return;  // renewed: same devices, no cost
  s.running.push_back(a.job);
  j.devices = a.devices;
  for (DeviceRef d : j.devices) s.device_owner[s.flat(d)] = static_cast<std::int64_t>(a.job);
  bool cross_type = false, cross_node = false;
  j.resources = resolved_resources(*s.model, a);
  j.resource_multiplier =
      std::isnan(a.rate_multiplier)
          ? sensitivity_multiplier(*s.model, j.job_type, j.devices, j.resources)
          : a.rate_multiplier;
  j.rate = placement_rate(s, j, &cross_type, &cross_node) * j.resource_multiplier;
  j.record.cross_type_placements += cross_type;
  j.record.cross_node_placements += cross_node;
  j.overhead_left =
      std::isnan(a.restart_overhead_s) ? j.restart_overhead_s : a.restart_overhead_s;
  j.run_start = s.now;
  j.settled_at = s.now;
  ++j.version;
  push_finish(j, a.job, s.now);
  if (std::isnan(j.record.first_start))
    j.record.first_start = s.now;
  else
    ++j.record.restarts;
  j.state = JobState::kRunning;
}

void SimulatedExecutor::push_finish(const Job& j, std::size_t index, double now) {
  if (!(j.rate > 0.0)) return;
  const double end = segment_end(j);
  double t = now + j.overhead_left + (end - j.done) / j.rate;
  if (j.finish_at_lease_end && end >= j.work && t <= j.lease_end + 1e-9) t = j.lease_end;
  finishes_.push({t, index, j.version});
}

void SimulatedExecutor::settle(SchedulerState& s, Job& j, double t) {
  const double dt = t - j.settled_at;
  if (dt <= 0.0) return;
  const double productive = std::max(0.0, dt - j.overhead_left);
  j.overhead_left = std::max(0.0, j.overhead_left - dt);
  j.done = std::min(j.work, j.done + productive * j.rate);
  j.record.done = j.done;
  j.record.attained_gpu_seconds += j.workers * dt;
  j.record.overhead_seconds += dt - productive;  // min(overhead left, dt): a stop ends it
  j.time_on_type[j.placement_type] += dt;
  j.record.multiplier_seconds += j.resource_multiplier * dt;
  j.settled_at = t;
  if (!sums_) return;
  sums_->busy_gpu_seconds += j.workers * dt;
  add_resource_seconds(*s.model, j, dt, *sums_);
  sums_->throughput += productive * j.normalised_rate();
  if (sums_->tenant_throughput.empty()) return;
  sums_->tenant_throughput[j.tenant] += productive * j.normalised_rate();
  const std::size_t k = s.model->cluster.num_types();
  for (DeviceRef d : j.devices) sums_->tenant_gpus[j.tenant * k + s.type_of(d)] += dt;
}

void SimulatedExecutor::settle_all(SchedulerState& s) {
  compact(s);
  // The running jobs lie scattered over a large array: fetching a few ahead
  // overlaps the cache misses that dominate this loop on big runs.
  constexpr std::size_t kAhead = 8;
  const std::size_t n = s.running.size();
  for (std::size_t r = 0; r < n; ++r) {
    if (r + kAhead < n) {
      const char* ahead = reinterpret_cast<const char*>(&s.jobs[s.running[r + kAhead]]);
      for (std::size_t line = 0; line < sizeof(Job); line += 64) __builtin_prefetch(ahead + line);
    }
    if (r + kAhead / 2 < n) {  // its vectors, now that the job's pointers are in cache
      const Job& ahead = s.jobs[s.running[r + kAhead / 2]];
      __builtin_prefetch(ahead.time_on_type.data());
      __builtin_prefetch(ahead.devices.data());
      __builtin_prefetch(ahead.resources.data());
    }
    settle(s, s.jobs[s.running[r]], s.now);
  }
}

double SimulatedExecutor::next_finish() const {
  return finishes_.empty() ? std::numeric_limits<double>::infinity() : finishes_.top().t;
}

void SimulatedExecutor::advance(SchedulerState& s, double until) {
  run_events(s, until);
  compact(s);
}

void SimulatedExecutor::compact(SchedulerState& s) {
  if (uncompacted_ == 0) return;
  uncompacted_ = 0;
  auto finished = [&](std::size_t i) { return s.jobs[i].state == JobState::kFinished; };
  std::erase_if(s.running, finished);
  std::erase_if(s.active, finished);
  if (s.active.empty()) s.active_weight = s.active_workers = 0.0;  // no round-off drift
}

std::size_t SimulatedExecutor::run_events(SchedulerState& s, double until) {
  std::size_t completed = 0;
  bool regime_changed = false;
  while (!finishes_.empty() && finishes_.top().t <= until) {
    Finish f = finishes_.top();
    finishes_.pop();
    Job& j = s.jobs[f.job];
    if (f.version != j.version || j.state != JobState::kRunning) continue;  // stopped since
    const double t = std::max(f.t, s.now);
    account_interval(s, t - s.now);
    s.now = t;
    settle(s, j, t);
    if (segment_end(j) < j.work) {
      // A regime boundary: the job goes on at the next batch size's rate on
      // the same devices, and the policy learns of it at its next point.
      j.done = segment_end(j);
      j.record.done = j.done;
      enter_regime(j, j.regime + 1);
      j.regime_starts.push_back(j.done);
      // The CPUs and memory it holds slow it as before.
      bool cross_type = false, cross_node = false;
      j.rate = placement_rate(s, j, &cross_type, &cross_node) * j.resource_multiplier;
      push_finish(j, f.job, t);
      regime_changed = true;
      continue;
    }
    j.done = j.work;
    j.record.done = j.work;
    j.record.finish = t;
    close_job(s, j);
    if (sums_ && !sums_->idle_by_type.empty())
      for (DeviceRef d : j.devices) ++sums_->idle_by_type[s.type_of(d)];
    if (sums_ && sums_->collect_freed)
      sums_->freed.insert(sums_->freed.end(), j.devices.begin(), j.devices.end());
    release(s, j);
    j.state = JobState::kFinished;
    ++completed;
  }
  account_interval(s, until - s.now);
  s.now = std::max(s.now, until);
  if (regime_changed) s.changed = true;
  if (completed > 0) {
    s.changed = true;
    uncompacted_ += completed;
    // Nothing left active: no round-off drift (as compact() would).
    if (s.active.size() == uncompacted_) s.active_weight = s.active_workers = 0.0;
  }
  return completed;
}

}  // namespace fairgpu
