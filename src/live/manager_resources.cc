// The live manager's CPUs and memory (issue 15 item 4, Synergy live;
// specs/synergy.md §6): what a plan grants a job is what its launch carries
// to each node's agent (docs/live-protocol.md "launch": `cpus`,
// `memory_gb`), kept in its part leases so that a restarted manager knows
// it; a renewal on the same devices with another grant is a new placement,
// as in the simulator. run_start() puts each part's grant in its Placement,
// which AgentExecutor sends with the launch.
#include <algorithm>
#include <cmath>

#include "live/manager.h"

namespace fairgpu::live {

bool Manager::same_grant(const Assignment& a, const Job& j) const {
  return resolved_resources(*model_, a) == j.resources &&
         (std::isnan(a.rate_multiplier) || a.rate_multiplier == j.resource_multiplier);
}

void Manager::take_grant(const Assignment& a, Job& j) const {
  j.resources = resolved_resources(*model_, a);
  j.resource_multiplier = std::isnan(a.rate_multiplier)
                              ? sensitivity_multiplier(*model_, j.job_type, a.devices, j.resources)
                              : a.rate_multiplier;
}

void Manager::grant_part(const Job& j, StoredLease& l) const {
  const auto node = nodes_.find(l.node);
  if (node == nodes_.end()) return;
  for (const NodeResources& r : j.resources)
    if (r.node == node->second.model_index) {
      l.cpus = r.cpus;
      l.memory_gb = r.memory_gb;
    }
}

std::vector<NodeResources> Manager::held_by_parts(const std::vector<std::int64_t>& parts) const {
  std::vector<NodeResources> out;
  for (std::int64_t id : parts) {
    const StoredLease& l = leases_.at(id);
    const auto node = nodes_.find(l.node);
    if (node == nodes_.end() || node->second.model_index == kNone) continue;
    out.push_back({static_cast<std::uint32_t>(node->second.model_index), l.cpus, l.memory_gb});
  }
  // resolved_resources' order: by node.
  std::sort(out.begin(), out.end(),
            [](const NodeResources& a, const NodeResources& b) { return a.node < b.node; });
  return out;
}

void Manager::add_grant_json(const JobEntry& e, nlohmann::json& j) const {
  j["cpus"] = nullptr;
  j["memory_gb"] = nullptr;
  j["limits"] = e.limits.empty() || !e.lease ? nlohmann::json(nullptr) : nlohmann::json(e.limits);
  if (!e.lease || !leases_.count(e.lease)) return;
  double cpus = 0.0, memory_gb = 0.0;
  for (std::int64_t id : part_ids(leases_.at(e.lease).gang)) {
    cpus += leases_.at(id).cpus;
    memory_gb += leases_.at(id).memory_gb;
  }
  j["cpus"] = cpus;
  j["memory_gb"] = memory_gb;
}

}  // namespace fairgpu::live
