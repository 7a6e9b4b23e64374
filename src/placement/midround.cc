// Mid-round starts (placement/midround.h).
#include "placement/midround.h"

#include <algorithm>
#include <limits>

namespace fairgpu::placement {

MidroundPlacer::MidroundPlacer(const SchedulerState& s, const std::vector<DeviceRef>& free)
    : s_(s) {
  free_.reserve(free.size());
  for (DeviceRef d : free)
    if (s.device_owner[s.flat(d)] == -1) free_.push_back(d);
  // Callers that keep their list sorted (the simulator) spare the sort.
  if (!std::is_sorted(free_.begin(), free_.end())) std::sort(free_.begin(), free_.end());
  free_.erase(std::unique(free_.begin(), free_.end()), free_.end());
  left_ = free_.size();
  left_by_type_.assign(s.model->cluster.num_types(), 0);
  for (std::size_t i = 0; i < free_.size(); ++i) {
    ++left_by_type_[s.model->cluster.nodes[free_[i].node].type];
    if (nodes_.empty() || nodes_.back().node != free_[i].node)
      nodes_.push_back({free_[i].node, i, i + 1});
    else
      nodes_.back().end = i + 1;
  }
}

std::optional<Assignment> MidroundPlacer::place(const MidroundCandidate& c, double round_end) {
  const Job& j = s_.jobs[c.job];
  if (j.state != JobState::kQueued || j.workers <= 0 ||
      static_cast<std::size_t>(j.workers) > left_)
    return std::nullopt;
  const auto workers = static_cast<std::size_t>(j.workers);
  NodeFree* best = nullptr;
  bool best_preferred = false;
  double best_rate = 0.0;
  for (NodeFree& n : nodes_) {
    const std::size_t count = n.end - n.begin;
    if (count < workers) continue;
    const std::size_t type = s_.model->cluster.nodes[n.node].type;
    if (!j.runs_on(type) || !(j.rate_one_node[type] > 0.0)) continue;
    const bool preferred = type < 64 && (c.preferred_types >> type & 1);
    const double rate = j.rate_one_node[type];
    const bool better =
        !best || preferred > best_preferred ||
        (preferred == best_preferred &&
         (rate > best_rate || (rate == best_rate && count < best->end - best->begin)));
    if (!better) continue;
    best = &n;
    best_preferred = preferred;
    best_rate = rate;
  }
  if (!best) return std::nullopt;
  Assignment a;
  a.job = c.job;
  a.lease_end = round_end;
  a.devices.assign(free_.begin() + static_cast<std::ptrdiff_t>(best->begin),
                   free_.begin() + static_cast<std::ptrdiff_t>(best->begin + workers));
  best->begin += workers;
  left_ -= workers;
  left_by_type_[s_.model->cluster.nodes[best->node].type] -= workers;
  return a;
}

std::optional<Assignment> MidroundPlacer::place_spread(const MidroundCandidate& c,
                                                       double round_end, double min_rate) {
  const Job& j = s_.jobs[c.job];
  if (j.state != JobState::kQueued || j.workers <= 1 || s_.model->cluster.gangs_on_one_node ||
      static_cast<std::size_t>(j.workers) > left_)
    return std::nullopt;
  const auto workers = static_cast<std::size_t>(j.workers);
  const std::size_t types = left_by_type_.size();
  const bool even = s_.model->cluster.gangs_spread_evenly;
  // Where gangs spread evenly: the GPUs per node of the fewest nodes of
  // type t that each have that many free (0: none).
  auto even_share = [&](std::size_t t) -> std::size_t {
    for (std::size_t k = 2; k <= workers; ++k) {
      if (workers % k != 0) continue;
      std::size_t fit = 0;
      for (const NodeFree& n : nodes_)
        if (s_.model->cluster.nodes[n.node].type == t && n.end - n.begin >= workers / k) ++fit;
      if (fit >= k) return workers / k;
    }
    return 0;
  };
  // Over nodes of one type: a preferred type first, then the fastest spread
  // rate.
  std::size_t first = types, last = types;
  bool best_preferred = false;
  double best_rate = 0.0;
  for (std::size_t t = 0; t < types; ++t) {
    if (left_by_type_[t] < workers || !j.runs_on(t)) continue;
    if (even && even_share(t) == 0) continue;
    const double rate = j.rate_spread[t];
    if (!(rate > 0.0) || rate < min_rate) continue;
    const bool preferred = t < 64 && (c.preferred_types >> t & 1);
    if (first == types || preferred > best_preferred ||
        (preferred == best_preferred && rate > best_rate)) {
      first = last = t;
      best_preferred = preferred;
      best_rate = rate;
    }
  }
  // Else over adjacent types (OEF's rule; types go slowest first), at the
  // slowest one's spread rate: the shortest run of types from each type up
  // that has room, the fastest such. (Never where gangs spread evenly.)
  if (first == types && !even) {
    for (std::size_t a = 0; a < types; ++a) {
      std::size_t room = 0;
      double rate = std::numeric_limits<double>::infinity();
      for (std::size_t b = a; b < types && j.runs_on(b) && j.rate_spread[b] > 0.0; ++b) {
        room += left_by_type_[b];
        rate = std::min(rate, j.rate_spread[b]);
        if (room < workers) continue;
        if (rate >= min_rate && (first == types || rate > best_rate)) {
          first = a;
          last = b;
          best_rate = rate;
        }
        break;
      }
    }
  }
  if (first == types) return std::nullopt;
  std::vector<NodeFree*> nodes;
  for (NodeFree& n : nodes_) {
    const std::size_t t = s_.model->cluster.nodes[n.node].type;
    if (n.end > n.begin && t >= first && t <= last) nodes.push_back(&n);
  }
  const std::size_t per = even ? even_share(first) : 0;
  if (even) {  // the same count from each: the nodes with the fewest that still hold it
    std::erase_if(nodes, [&](const NodeFree* n) { return n->end - n->begin < per; });
    std::stable_sort(nodes.begin(), nodes.end(), [](const NodeFree* x, const NodeFree* y) {
      return x->end - x->begin < y->end - y->begin;
    });
  } else {  // emptiest first: as few nodes as possible
    std::stable_sort(nodes.begin(), nodes.end(), [](const NodeFree* x, const NodeFree* y) {
      return x->end - x->begin > y->end - y->begin;
    });
  }
  Assignment a;
  a.job = c.job;
  a.lease_end = round_end;
  for (NodeFree* n : nodes) {
    const std::size_t take =
        even ? per : std::min(n->end - n->begin, workers - a.devices.size());
    a.devices.insert(a.devices.end(), free_.begin() + static_cast<std::ptrdiff_t>(n->begin),
                     free_.begin() + static_cast<std::ptrdiff_t>(n->begin + take));
    n->begin += take;
    left_by_type_[s_.model->cluster.nodes[n->node].type] -= take;
    if (a.devices.size() == workers) break;
  }
  left_ -= workers;
  return a;
}

std::vector<DeviceRef> unowned_devices(const SchedulerState& s) {
  std::vector<DeviceRef> out;
  std::size_t flat = 0;
  for (std::uint32_t n = 0; n < s.model->cluster.nodes.size(); ++n)
    for (int g = 0; g < s.model->cluster.nodes[n].gpus; ++g, ++flat)
      if (s.device_owner[flat] == -1) out.push_back({n, static_cast<std::uint32_t>(g)});
  return out;
}

}  // namespace fairgpu::placement
