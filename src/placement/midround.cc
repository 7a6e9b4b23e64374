// Mid-round starts (placement/midround.h).
#include "placement/midround.h"

#include <algorithm>

namespace fairgpu::placement {

MidroundPlacer::MidroundPlacer(const SchedulerState& s, const std::vector<DeviceRef>& free)
    : s_(s) {
  free_.reserve(free.size());
  for (DeviceRef d : free)
    if (s.device_owner[s.flat(d)] == -1) free_.push_back(d);
  std::sort(free_.begin(), free_.end());
  free_.erase(std::unique(free_.begin(), free_.end()), free_.end());
  left_ = free_.size();
  for (std::size_t i = 0; i < free_.size(); ++i)
    if (nodes_.empty() || nodes_.back().node != free_[i].node)
      nodes_.push_back({free_[i].node, i, i + 1});
    else
      nodes_.back().end = i + 1;
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
