// Scheduler state: building it from a bound model and a workload, the
// interval accounting every executor shares, and the plan check that keeps a
// buggy policy from double-booking a device.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

#include "core/gang_rates.h"
#include "core/prefetch.h"
#include "fairgpu/scheduler.h"

namespace fairgpu {

GangRates gang_rates(const ClusterModel& model, const JobTypeProfile& p, int workers,
                     double units_per_iteration) {
  const std::size_t k = model.cluster.num_types();
  GangRates r;
  r.one_node.resize(k);
  r.spread.resize(k);
  r.best.resize(k);
  for (std::size_t t = 0; t < k; ++t) {
    const std::string& type = model.cluster.gpu_types[t];
    r.one_node[t] = p.rate(type, workers, false) * units_per_iteration;
    r.spread[t] = model.cluster.gangs_on_one_node
                      ? 0.0  // a spread gang cannot run there
                      : p.rate(type, workers, true) * units_per_iteration;
    r.best[t] = workers <= model.largest_node[t] ? r.one_node[t] : r.spread[t];
    r.capacity_mean += model.capacity[t] / double(model.total_gpus) * r.best[t];
  }
  for (std::size_t t = 0; t < k && r.ref == 0.0; ++t) r.ref = r.best[t];
  return r;
}

std::size_t add_job(SchedulerState& s, const JobSpec& spec) {
  const ClusterModel& model = *s.model;
  const std::size_t k = model.cluster.num_types();
  const double total = model.total_gpus;
  // GPU-proportional CPU and memory for jobs that give none: the aggregate of
  // the GPU nodes (the model keeps no CPU-only node), so such a job's share of
  // CPUs and of memory equals its share of GPUs.
  if (std::isnan(s.node_cpus_total)) {
    s.node_cpus_total = s.node_memory_gb_total = 0.0;
    for (const Node& n : model.cluster.nodes) {
      s.node_cpus_total += n.cpus;
      s.node_memory_gb_total += n.memory_gb;
    }
  }
  const double cluster_cpus = s.node_cpus_total, cluster_memory_gb = s.node_memory_gb_total;
  auto demand = [&spec](double given, double proportional, const char* what) {
    if (std::isnan(given)) return proportional;
    if (!(given >= 0.0) || !std::isfinite(given))  // readers reject these; a caller bug
      throw std::invalid_argument(fmt::format("job {}: {} must be finite and >= 0, got {}",
                                              spec.id, what, given));
    return given;
  };
  Job j;
  j.index = s.jobs.size();
  auto it = s.tenant_index.find(spec.tenant);
  if (it == s.tenant_index.end()) {  // a reader that forgot the tenant list
    it = s.tenant_index.emplace(spec.tenant, s.tenants.size()).first;
    s.tenants.push_back({spec.tenant, 1.0});
  }
  j.tenant = it->second;
  j.job_type = *model.profiles.index(spec.job_type);
  j.workers = spec.workers;
  j.weight = spec.weight;
  j.arrival = spec.arrival_s;
  j.cpus = demand(spec.cpus, spec.workers * cluster_cpus / total, "cpus");
  j.memory_gb = demand(spec.memory_gb, spec.workers * cluster_memory_gb / total, "memory_gb");
  const JobTypeProfile& p = model.profiles.job_types[j.job_type];
  GangRates rates = gang_rates(model, p, j.workers, 1.0);
  const double mean_rate = rates.capacity_mean;
  j.rate_one_node = std::move(rates.one_node);
  j.rate_spread = std::move(rates.spread);
  j.rate_best = std::move(rates.best);
  j.ref_rate = rates.ref;
  j.work = std::isnan(spec.iterations) ? spec.duration_s * j.ref_rate : spec.iterations;
  j.restart_overhead_s = p.restart_overhead_s.value_or(model.restart_overhead_s);
  j.time_on_type.assign(k, 0.0);
  j.last_stop = j.arrival;

  JobRecord& r = j.record;
  r.id = spec.id;
  r.tenant = spec.tenant;
  r.job_type = spec.job_type;
  r.workers = spec.workers;
  r.weight = spec.weight;
  r.arrival = spec.arrival_s;
  r.work = j.work;
  r.exclusive_s = j.work / mean_rate;
  if (!spec.regimes.empty()) bind_adaptation(model, spec, j);
  j.fair_class = s.fair_classes.size();
  for (std::size_t c = 0; c < s.fair_classes.size(); ++c)
    if (s.fair_classes[c].workers == j.workers && s.fair_classes[c].weight == j.weight)
      j.fair_class = c;
  if (j.fair_class == s.fair_classes.size()) s.fair_classes.push_back({j.workers, j.weight, 0.0});
  s.jobs.push_back(std::move(j));
  return s.jobs.size() - 1;
}

SchedulerState make_scheduler_state(const ClusterModel& model, const Workload& workload) {
  SchedulerState s;
  s.model = &model;
  s.tenants = workload.tenants;
  for (std::size_t t = s.tenants.size(); t-- > 0;) s.tenant_index[s.tenants[t].name] = t;
  for (std::size_t i = 1; i < workload.jobs.size(); ++i)
    if (workload.jobs[i].arrival_s < workload.jobs[i - 1].arrival_s)
      throw std::invalid_argument("workload jobs must be sorted by arrival (readers sort them)");
  s.jobs.reserve(workload.jobs.size());
  for (const JobSpec& spec : workload.jobs) add_job(s, spec);
  s.device_owner.assign(static_cast<std::size_t>(model.total_gpus), -1);
  s.reserved.assign(model.cluster.num_types(), 0);
  return s;
}

void account_interval(SchedulerState& s, double dt) {
  if (dt <= 0.0 || !(s.active_weight > 0.0)) return;
  const double total = s.model->total_gpus;
  s.contention_integral += std::max(1.0, s.active_workers / total) * dt;
  // Astraea eq. 3-4: a job's weighted share of all M GPUs, capped by its gang
  // (it cannot use more).
  for (auto& c : s.fair_classes)
    c.integral += std::min<double>(c.workers, total * c.weight / s.active_weight) * dt;
}

void admit_job(SchedulerState& s, std::size_t i) {
  Job& j = s.jobs[i];
  j.state = JobState::kQueued;
  j.fair_mark = s.fair_classes[j.fair_class].integral;
  j.contention_mark = s.contention_integral;
  s.active.push_back(i);
  s.active_weight += j.weight;
  s.active_workers += j.workers;
  s.changed = true;
}

void close_job(SchedulerState& s, Job& j) {
  j.record.fair_gpu_seconds = s.fair_classes[j.fair_class].integral - j.fair_mark;
  const double span = s.now - j.arrival;
  j.record.contention_avg = span > 0.0 ? (s.contention_integral - j.contention_mark) / span : 1.0;
  s.active_weight -= j.weight;
  s.active_workers -= j.workers;
}

void validate_plan(const RoundPlan& plan, const SchedulerState& s) {
  auto fail = [](const std::string& what) { throw std::logic_error("invalid round plan: " + what); };
  // A job named twice: a flag per job in a table kept across calls (sized to
  // the jobs once, cleared again here), so a round costs O(plan). On a
  // repeat or an unknown index, sorted indices name the smallest repeated.
  thread_local std::vector<char> named_flag;
  if (named_flag.size() < s.jobs.size()) named_flag.resize(s.jobs.size(), 0);
  std::size_t marked = 0;
  for (; marked < plan.run.size(); ++marked) {
    const std::size_t i = plan.run[marked].job;
    if (i >= s.jobs.size() || named_flag[i]) break;
    named_flag[i] = 1;
  }
  for (std::size_t r = 0; r < marked; ++r) named_flag[plan.run[r].job] = 0;
  if (marked < plan.run.size()) {
    std::vector<std::size_t> named;
    named.reserve(plan.run.size());
    for (const Assignment& a : plan.run) named.push_back(a.job);
    std::sort(named.begin(), named.end());
    if (auto twice = std::adjacent_find(named.begin(), named.end()); twice != named.end())
      fail(*twice < s.jobs.size() ? fmt::format("job {} named twice", s.jobs[*twice].record.id)
                                  : fmt::format("unknown job {}", *twice));
  }
  std::vector<std::int64_t> booked(s.device_owner.size(), -1);
  for (std::size_t d = 0; d < booked.size(); ++d)
    if (s.device_owner[d] == kDeviceReserved) booked[d] = kDeviceReserved;
  // Devices of jobs whose lease still runs stay theirs.
  for (std::size_t r = 0; r < s.running.size(); ++r) {
    prefetch_ahead(s.jobs, s.running, r, &Job::lease_end, &Job::devices);
    const std::size_t i = s.running[r];
    const Job& j = s.jobs[i];
    if (!s.lease_ended(j))
      for (DeviceRef d : j.devices) booked[s.flat(d)] = static_cast<std::int64_t>(i);
  }
  for (std::size_t r = 0; r < plan.run.size(); ++r) {
    if (r + 8 < plan.run.size() && plan.run[r + 8].job < s.jobs.size()) {
      const Job& ahead = s.jobs[plan.run[r + 8].job];
      __builtin_prefetch(&ahead.state);
      __builtin_prefetch(&ahead.workers);
      __builtin_prefetch(&ahead.lease_end);
    }
    const Assignment& a = plan.run[r];
    if (a.job >= s.jobs.size()) fail(fmt::format("unknown job {}", a.job));
    const Job& j = s.jobs[a.job];
    if (!j.active()) fail(fmt::format("job {} is not active", j.record.id));
    if (static_cast<int>(a.devices.size()) != j.workers)
      fail(fmt::format("job {} needs {} devices, got {}", j.record.id, j.workers,
                       a.devices.size()));
    if (!(a.lease_end > s.now)) fail(fmt::format("job {} lease ends in the past", j.record.id));
    bool held = j.state == JobState::kRunning && !s.lease_ended(j);
    if (held) {
      auto mine = j.devices, given = a.devices;
      std::sort(mine.begin(), mine.end());
      std::sort(given.begin(), given.end());
      if (mine != given) fail(fmt::format("job {} moved before its lease ended", j.record.id));
      continue;
    }
    for (DeviceRef d : a.devices) {
      if (d.node >= s.model->cluster.nodes.size() ||
          d.gpu >= static_cast<std::uint32_t>(s.model->cluster.nodes[d.node].gpus))
        fail(fmt::format("job {} given a device that does not exist", j.record.id));
      std::int64_t& b = booked[s.flat(d)];
      if (b == kDeviceReserved)
        fail(fmt::format("job {} given reserved device {}:{}", j.record.id, d.node, d.gpu));
      if (b >= 0)
        fail(fmt::format("device {}:{} given to job {} and job {}", d.node, d.gpu,
                         s.jobs[static_cast<std::size_t>(b)].record.id, j.record.id));
      b = static_cast<std::int64_t>(a.job);
    }
    if (s.model->cluster.gangs_on_one_node)
      for (DeviceRef d : a.devices)
        if (d.node != a.devices.front().node)
          fail(fmt::format("job {} spread over nodes where a gang keeps to one", j.record.id));
  }
}

}  // namespace fairgpu
