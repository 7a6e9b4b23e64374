// CPU and memory over time (Synergy's allocation and utilisation figures,
// specs/synergy.md §4): what running jobs hold and what they use of it.
#include <algorithm>

#include "fairgpu/simulator.h"

namespace fairgpu {

void add_resource_seconds(const ClusterModel& model, const Job& j, double dt,
                          SimulatedExecutor::RoundSums& sums) {
  const JobTypeProfile& p = model.profiles.job_types[j.job_type];
  for (const NodeResources& r : j.resources) {
    sums.cpu_seconds += r.cpus * dt;
    sums.memory_gb_seconds += r.memory_gb * dt;
    const Node& n = model.cluster.nodes[r.node];
    const SensitivityTable* t = p.sensitivity_on(model.cluster.gpu_types[n.type]);
    double cpus = r.cpus, memory = r.memory_gb;
    if (t) {
      // Beyond its best-case demand a job gains nothing: the rest sits idle.
      int gpus = 0;
      for (DeviceRef d : j.devices) gpus += d.node == r.node;
      cpus = std::min(cpus, t->best_cpu_per_gpu * gpus);
      memory = std::min(memory, t->best_memory_gb_per_gpu * gpus);
    }
    sums.cpu_used_seconds += cpus * dt;
    sums.memory_gb_used_seconds += memory * dt;
  }
}

}  // namespace fairgpu
