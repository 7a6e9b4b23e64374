// Mid-round starts (placement/midround.h).
#include "placement/midround.h"

#include <algorithm>

namespace fairgpu::placement {

MidroundPlacer::MidroundPlacer(const SchedulerState& s, const std::vector<DeviceRef>& free)
    : s_(s) {
  for (DeviceRef d : free)
    if (s.device_owner[s.flat(d)] == -1) by_node_[d.node].push_back(d.gpu);
  for (auto& [node, gpus] : by_node_) {
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    left_ += gpus.size();
  }
}

std::optional<Assignment> MidroundPlacer::place(const MidroundCandidate& c, double round_end) {
  const Job& j = s_.jobs[c.job];
  if (j.state != JobState::kQueued || j.workers <= 0 ||
      static_cast<std::size_t>(j.workers) > left_)
    return std::nullopt;
  std::uint32_t best_node = 0;
  bool found = false, best_preferred = false;
  double best_rate = 0.0;
  std::size_t best_free = 0;
  for (const auto& [node, gpus] : by_node_) {
    if (gpus.size() < static_cast<std::size_t>(j.workers)) continue;
    const std::size_t type = s_.model->cluster.nodes[node].type;
    if (!j.runs_on(type) || !(j.rate_one_node[type] > 0.0)) continue;
    const bool preferred = type < 64 && (c.preferred_types >> type & 1);
    const double rate = j.rate_one_node[type];
    const bool better = !found || preferred > best_preferred ||
                        (preferred == best_preferred &&
                         (rate > best_rate || (rate == best_rate && gpus.size() < best_free)));
    if (!better) continue;
    found = true;
    best_node = node;
    best_preferred = preferred;
    best_rate = rate;
    best_free = gpus.size();
  }
  if (!found) return std::nullopt;
  std::vector<std::uint32_t>& gpus = by_node_[best_node];
  Assignment a;
  a.job = c.job;
  a.lease_end = round_end;
  for (int w = 0; w < j.workers; ++w) a.devices.push_back({best_node, gpus[w]});
  gpus.erase(gpus.begin(), gpus.begin() + j.workers);
  if (gpus.empty()) by_node_.erase(best_node);
  left_ -= static_cast<std::size_t>(j.workers);
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
