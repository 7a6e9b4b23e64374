// CPU and memory sensitivity (Synergy, OSDI'22 §3; specs/synergy.md §1, §6):
// table look-ups and the resources an assignment holds per node.
#include <algorithm>
#include <cstddef>
#include <map>

#include "fairgpu/profile.h"
#include "fairgpu/scheduler.h"

namespace fairgpu {
namespace {

// The index of the largest grid point <= v (0 below the grid). A relative
// tolerance keeps 62.5 * 3 / 3 on its own grid point.
std::size_t floor_index(const std::vector<double>& grid, double v) {
  std::size_t i = 0;
  for (std::size_t k = 0; k < grid.size(); ++k)
    if (grid[k] <= v * (1.0 + 1e-9) + 1e-12) i = k;
  return i;
}

}  // namespace

double SensitivityTable::at(double cpus, double memory_gb) const {
  const std::size_t i = floor_index(cpu_per_gpu, cpus);
  const std::size_t k = floor_index(memory_gb_per_gpu, memory_gb);
  return multiplier[i * memory_gb_per_gpu.size() + k];
}

const SensitivityTable* JobTypeProfile::sensitivity_on(const std::string& gpu_type) const {
  if (auto it = sensitivity.find(gpu_type); it != sensitivity.end()) return &it->second;
  if (auto it = sensitivity.find(""); it != sensitivity.end()) return &it->second;
  return nullptr;
}

std::vector<NodeResources> resolved_resources(const ClusterModel& model, const Assignment& a) {
  if (!a.resources.empty()) return a.resources;
  std::map<std::uint32_t, int> gpus_on;
  for (DeviceRef d : a.devices) ++gpus_on[d.node];
  std::vector<NodeResources> out;
  out.reserve(gpus_on.size());
  for (const auto& entry : gpus_on) {
    const Node& n = model.cluster.nodes[entry.first];
    const double share = n.gpus > 0 ? double(entry.second) / n.gpus : 0.0;
    out.push_back({entry.first, n.cpus * share, n.memory_gb * share});
  }
  return out;
}

double sensitivity_multiplier(const ClusterModel& model, std::size_t job_type,
                              const std::vector<DeviceRef>& devices,
                              const std::vector<NodeResources>& held) {
  const JobTypeProfile& p = model.profiles.job_types[job_type];
  if (p.sensitivity.empty()) return 1.0;
  double m = 1.0;
  bool first = true;
  for (const NodeResources& r : held) {
    const Node& n = model.cluster.nodes[r.node];
    if (!(n.cpus > 0.0) || !(n.memory_gb > 0.0)) continue;
    const SensitivityTable* t = p.sensitivity_on(model.cluster.gpu_types[n.type]);
    if (!t) continue;
    int gpus = 0;
    for (DeviceRef d : devices) gpus += d.node == r.node;
    if (gpus == 0) continue;
    const double v = t->at(r.cpus / gpus, r.memory_gb / gpus);
    m = first ? v : std::min(m, v);
    first = false;
  }
  return m;
}

}  // namespace fairgpu
