// Synergy's shared machinery (policy/synergy.h; specs/synergy.md §1-§3).
//
// Choices where the paper (as the reading notes give it) is silent:
// - Best fit scores a server by the GPUs it would have left, then the CPU and
//   memory it would have left (as fractions of the server's), then whether
//   the job ran there last round, then its index. Within a server a job gets
//   back the GPUs it held, so an unchanged allocation is a lease renewal.
// - A job that does not fit one server under best fit is spread over the
//   servers with the most free GPUs, the same CPUs and memory per GPU on each
//   (the paper's rule for distributed jobs).
// - On a cluster with several GPU types a job takes GPUs only of types it
//   runs on; its demand comes from its table on the type with the most GPUs
//   among them (the table of each server's own type sets its speed).
#include "policy/synergy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace fairgpu::policy::synergy {
namespace {

constexpr double kEps = 1e-9;
constexpr double kStarvedS = 1000.0 * 3600.0;  // Synergy's priority boost

}  // namespace

const SensitivityTable* table_for(const SchedulerState& s, const Job& j) {
  const ClusterModel& m = *s.model;
  std::size_t best_type = m.capacity.size();
  for (std::size_t t = 0; t < m.capacity.size(); ++t)
    if (j.runs_on(t) && (best_type == m.capacity.size() || m.capacity[t] > m.capacity[best_type]))
      best_type = t;
  if (best_type == m.capacity.size()) return nullptr;
  return m.profiles.job_types[j.job_type].sensitivity_on(m.cluster.gpu_types[best_type]);
}

std::vector<OptionSpec> keys() {
  return {choice_option("level", "job", "job only: Synergy decides job by job", {"job"}),
          number_option("round", 300.0, "round = lease, seconds (Synergy: 300)", 0.0,
                        std::numeric_limits<double>::infinity(), true),
          choice_option("base", "fifo", "base order: fifo | las | srtf | ftf (Synergy §2)",
                        {"fifo", "las", "srtf", "ftf"}),
          choice_option("placement", "auto",
                        "best-fit | first-fit | auto (best-fit in mode=paper, first-fit in "
                        "mode=compat)",
                        {"auto", "best-fit", "first-fit"}),
          choice_option("mode", "paper",
                        "paper (the paper's semantics) | compat (Synergy's simulator: "
                        "two-point speedups, no restart cost, finish at the round end)",
                        {"paper", "compat"})};
}

int Placed::gpus_on(std::uint32_t node) const {
  for (const auto& part : parts)
    if (part.first == node) return static_cast<int>(part.second.size());
  return 0;
}

Round::Round(const SchedulerState& s, Fit fit, Mode mode) : s_(s), fit_(fit), mode_(mode) {
  const ClusterModel& m = *s.model;
  const std::size_t n = m.cluster.nodes.size();
  free_dev_.resize(n);
  free_.resize(n);
  double cpus = 0.0, memory = 0.0;
  for (std::uint32_t node = 0; node < n; ++node) {
    const Node& nd = m.cluster.nodes[node];
    free_[node] = {nd.cpus, nd.memory_gb};
    cpus += nd.cpus;
    memory += nd.memory_gb;
    largest_.gpus = std::max(largest_.gpus, nd.gpus);
    largest_.cpus = std::max(largest_.cpus, nd.cpus);
    largest_.memory_gb = std::max(largest_.memory_gb, nd.memory_gb);
    for (std::uint32_t g = 0; g < static_cast<std::uint32_t>(nd.gpus); ++g) {
      const std::int64_t owner = s.device_owner[m.node_first_device[node] + g];
      if (owner == -1 || (owner >= 0 && s.lease_ended(s.jobs[std::size_t(owner)])))
        free_dev_[node].push_back(g);
    }
    free_total_ += static_cast<int>(free_dev_[node].size());
  }
  cluster_prop_ = {cpus / m.total_gpus, memory / m.total_gpus};
  // Jobs whose lease still runs keep what they hold.
  for (std::size_t i : s.running) {
    const Job& j = s.jobs[i];
    if (s.lease_ended(j)) continue;
    for (const NodeResources& r : j.resources) {
      free_[r.node].cpus -= r.cpus;
      free_[r.node].memory_gb -= r.memory_gb;
    }
  }
}

PerGpu Round::proportional(std::uint32_t node) const {
  const Node& nd = s_.model->cluster.nodes[node];
  return {nd.cpus / nd.gpus, nd.memory_gb / nd.gpus};
}

bool Round::usable(const Job& j, std::uint32_t node) const {
  return j.runs_on(s_.model->cluster.nodes[node].type);
}

Round::Demand Round::best_demand(const Job& j) const {
  const SensitivityTable* t = table_for(s_, j);
  if (!t) return {cluster_prop_, 1.0};
  const int largest_gpus = largest_.gpus;
  const double largest_cpus = largest_.cpus, largest_memory = largest_.memory_gb;
  const double g = j.workers;
  Demand d{{t->best_cpu_per_gpu, t->best_memory_gb_per_gpu}, t->speedup};
  if (j.workers > largest_gpus) {
    if (g * d.per_gpu.cpus > largest_cpus || g * d.per_gpu.memory_gb > largest_memory)
      return {cluster_prop_, 1.0};
    return d;
  }
  // The whole job on one server: cap its demand at the server's size, the
  // speedup interpolated linearly in CPUs (Synergy's add_synergy_profile).
  const double cpus = std::min(d.per_gpu.cpus, largest_cpus / g);
  d.per_gpu.memory_gb = std::min(d.per_gpu.memory_gb, largest_memory / g);
  if (cpus < d.per_gpu.cpus) {
    const double prop = cluster_prop_.cpus;
    if (d.per_gpu.cpus > prop)
      d.speedup =
          1.0 + (t->speedup - 1.0) / (g * d.per_gpu.cpus - g * prop) * (g * cpus - g * prop);
    d.per_gpu.cpus = cpus;
  }
  return d;
}

std::vector<std::uint32_t> Round::pick_devices(const Job& j, std::uint32_t node, int count) const {
  std::vector<std::uint32_t> out;
  const auto& free = free_dev_[node];
  if (j.state == JobState::kRunning)
    for (DeviceRef d : j.devices)
      if (d.node == node && int(out.size()) < count &&
          std::binary_search(free.begin(), free.end(), d.gpu))
        out.push_back(d.gpu);
  for (std::uint32_t g : free) {
    if (int(out.size()) == count) break;
    if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void Round::place_on(const Job& j, const std::vector<std::pair<std::uint32_t, int>>& counts,
                     PerGpu d, double speedup) {
  std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> parts;
  for (const auto& c : counts) parts.push_back({c.first, pick_devices(j, c.first, c.second)});
  std::sort(parts.begin(), parts.end());
  for (const auto& part : parts) {
    auto& free = free_dev_[part.first];
    for (std::uint32_t g : part.second) free.erase(std::find(free.begin(), free.end(), g));
    free_total_ -= static_cast<int>(part.second.size());
    const double n = double(part.second.size());
    free_[part.first].cpus -= d.cpus * n;
    free_[part.first].memory_gb -= d.memory_gb * n;
  }
  placed_.push_back({j.index, std::move(parts), d, speedup});
}

bool Round::alloc(const Job& j, PerGpu d, double speedup) {
  const int g = j.workers;
  const auto nodes = static_cast<std::uint32_t>(num_nodes());
  // How many GPUs of `node` the job can take with d per GPU.
  auto room = [&](std::uint32_t node) {
    if (!usable(j, node)) return 0;
    double k = static_cast<double>(free_gpus(node));
    if (d.cpus > 0) k = std::min(k, std::floor(free_[node].cpus / d.cpus + kEps));
    if (d.memory_gb > 0) k = std::min(k, std::floor(free_[node].memory_gb / d.memory_gb + kEps));
    return static_cast<int>(std::max(0.0, k));
  };
  const bool one_node = s_.model->cluster.gangs_on_one_node;
  const bool even = s_.model->cluster.gangs_spread_evenly;
  std::vector<std::uint32_t> order(nodes);
  for (std::uint32_t node = 0; node < nodes; ++node) order[node] = node;
  if (fit_ == Fit::kFirst) {
    // Synergy's SYNERGY_RANDOM order: GPUs by index, each on a server whose
    // free CPUs and memory still cover one more GPU's share (where gangs
    // keep to one node: the first server that covers the whole gang).
    if (one_node) {
      for (std::uint32_t node : order)
        if (room(node) >= g) {
          place_on(j, {{node, g}}, d, speedup);
          return true;
        }
      return false;
    }
    const auto counts = even ? take_gpus_evenly(order, g, room, s_.model->cluster)
                             : take_gpus(order, g, room);
    if (counts.empty()) return false;
    place_on(j, counts, d, speedup);
    return true;
  }
  // Best fit on one server.
  std::uint32_t chosen = nodes;
  std::tuple<int, double, int, std::uint32_t> best_score{};
  for (std::uint32_t node = 0; node < nodes; ++node) {
    if (room(node) < g) continue;
    const Node& nd = s_.model->cluster.nodes[node];
    const double left =
        (nd.cpus > 0 ? (free_[node].cpus - g * d.cpus) / nd.cpus : 0.0) +
        (nd.memory_gb > 0 ? (free_[node].memory_gb - g * d.memory_gb) / nd.memory_gb : 0.0);
    bool was_here = false;
    if (j.state == JobState::kRunning)
      for (DeviceRef dev : j.devices) was_here |= dev.node == node;
    std::tuple<int, double, int, std::uint32_t> score{free_gpus(node) - g, left, was_here ? 0 : 1,
                                                      node};
    if (chosen == nodes || score < best_score) {
      chosen = node;
      best_score = score;
    }
  }
  if (chosen != nodes) {
    place_on(j, {{chosen, g}}, d, speedup);
    return true;
  }
  if (g == 1 || one_node) return false;
  // Spread: the servers with the most room first.
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return room(a) > room(b); });
  const auto counts =
      even ? take_gpus_evenly(order, g, room, s_.model->cluster) : take_gpus(order, g, room);
  if (counts.empty()) return false;
  place_on(j, counts, d, speedup);
  return true;
}

void Round::resize(std::size_t p, PerGpu d, double speedup) {
  Placed& pl = placed_[p];
  for (const auto& part : pl.parts) {
    const double n = double(part.second.size());
    free_[part.first].cpus += (pl.held.cpus - d.cpus) * n;
    free_[part.first].memory_gb += (pl.held.memory_gb - d.memory_gb) * n;
  }
  pl.held = d;
  pl.speedup = speedup;
}

RoundPlan Round::plan(double lease_end) const {
  RoundPlan out;
  out.recomputed = true;
  for (const Placed& p : placed_) {
    Assignment a;
    a.job = p.job;
    a.lease_end = lease_end;
    for (const auto& part : p.parts) {
      for (std::uint32_t g : part.second) a.devices.push_back({part.first, g});
      const double n = double(part.second.size());
      a.resources.push_back({part.first, p.held.cpus * n, p.held.memory_gb * n});
    }
    if (mode_ == Mode::kCompat) {
      a.rate_multiplier = p.speedup;
      a.restart_overhead_s = 0.0;
      a.finish_at_lease_end = true;
    }
    out.run.push_back(std::move(a));
  }
  return out;
}

std::vector<std::size_t> base_order(const Round& r, Base base, Mode mode) {
  const SchedulerState& s = r.state();
  struct Key {
    double priority_neg, primary, arrival;
    std::size_t index;
  };
  std::vector<Key> keys;
  for (std::size_t i : s.active) {
    const Job& j = s.jobs[i];
    if (j.state == JobState::kRunning && !s.lease_ended(j)) continue;
    const bool starved = j.state != JobState::kRunning && s.now - j.last_stop > kStarvedS;
    Key k{starved ? -1.0 : 0.0, 0.0, j.arrival, i};
    const double proportional_rate = j.ref_rate;  // rate at the proportional share
    const double remaining_s = (j.work - done_now(s, j)) / proportional_rate;
    switch (base) {
      case Base::kFifo:
        k.priority_neg = 0.0;  // Synergy's FIFO ignores priority
        break;
      case Base::kLas:
        k.primary = attained_now(s, j);
        break;
      case Base::kSrtf:
        k.primary = remaining_s / r.best_demand(j).speedup;
        break;
      case Base::kFtf: {
        const double rho = (s.now - j.arrival + remaining_s) / (j.work / proportional_rate);
        k.primary = mode == Mode::kCompat ? rho : -rho;
        break;
      }
    }
    keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return std::tie(a.priority_neg, a.primary, a.arrival, a.index) <
           std::tie(b.priority_neg, b.primary, b.arrival, b.index);
  });
  std::vector<std::size_t> out;
  out.reserve(keys.size());
  for (const Key& k : keys) out.push_back(k.index);
  return out;
}

std::vector<std::size_t> runnable(const Round& r, const std::vector<std::size_t>& order) {
  int free = r.free_gpus();
  std::vector<std::size_t> out;
  for (std::size_t i : order) {
    const int g = r.state().jobs[i].workers;
    if (g <= free) {
      out.push_back(i);
      free -= g;
    }
  }
  return out;
}

std::vector<std::size_t> attempt_order(const Round& r, const std::vector<std::size_t>& order,
                                       Base base, bool tune) {
  const SchedulerState& s = r.state();
  if (r.mode() == Mode::kCompat) {
    if (base != Base::kLas) return order;
    std::vector<std::size_t> out = runnable(r, order);
    if (tune)
      std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
        return s.jobs[a].workers > s.jobs[b].workers;
      });
    return out;
  }
  std::vector<std::size_t> out = runnable(r, order);
  if (tune) {
    std::vector<std::tuple<int, double, double>> key(s.jobs.size());
    for (std::size_t i : out) {
      const PerGpu d = r.best_demand(s.jobs[i]).per_gpu;
      key[i] = {s.jobs[i].workers, s.jobs[i].workers * d.cpus, s.jobs[i].workers * d.memory_gb};
    }
    std::stable_sort(out.begin(), out.end(),
                     [&](std::size_t a, std::size_t b) { return key[a] > key[b]; });
  }
  return out;
}

SynergyPolicy::SynergyPolicy(const PolicyOptions& o)
    : name_(o.full_name()), round_s_(o.number("round")) {
  const std::string& b = o.choice("base");
  base_ = b == "las"    ? Base::kLas
          : b == "srtf" ? Base::kSrtf
          : b == "ftf"  ? Base::kFtf
                        : Base::kFifo;
  mode_ = o.choice("mode") == "compat" ? Mode::kCompat : Mode::kPaper;
  const std::string& p = o.choice("placement");
  fit_ = p == "first-fit"  ? Fit::kFirst
         : p == "best-fit" ? Fit::kBest
                           : (mode_ == Mode::kCompat ? Fit::kFirst : Fit::kBest);
}

RoundPlan SynergyPolicy::plan(const SchedulerState& s) {
  steady_ = false;
  if (s.active.empty()) return {};
  Round r(s, fit_, mode_);
  allocate(r, base_order(r, base_, mode_));
  RoundPlan plan = r.plan(s.now + round_s_);
  if (base_ == Base::kFifo && mode_ == Mode::kPaper && plan.run.size() == s.running.size()) {
    steady_ = true;
    for (std::size_t i : s.running) steady_ &= s.lease_ended(s.jobs[i]);
    for (const Assignment& a : plan.run) {
      const Job& j = s.jobs[a.job];
      steady_ &= j.state == JobState::kRunning && a.devices == j.devices &&
                 a.resources == j.resources && std::isnan(a.rate_multiplier) &&
                 !a.finish_at_lease_end;
    }
  }
  // A steady plan is the decision in force again, not a new one (so the
  // points skipped after it, reported not recomputed, agree with it).
  if (steady_) plan.recomputed = false;
  return plan;
}

}  // namespace fairgpu::policy::synergy
