// Cluster (fairgpu/cluster.h): capacity per GPU type and the built-in cluster
// of `fairgpu simulate`: the three GPU types of Gavel's profiles (k80, p100,
// v100), four nodes of each. The node shape (4 GPUs, 32 cores, 256 GB) is a
// typical 4-GPU training server, a default rather than a measurement.
#include "fairgpu/cluster.h"

#include <string>

namespace fairgpu {

std::optional<std::size_t> Cluster::type_index(std::string_view name) const {
  for (std::size_t t = 0; t < gpu_types.size(); ++t)
    if (gpu_types[t] == name) return t;
  return std::nullopt;
}

std::vector<int> Cluster::capacity() const {
  std::vector<int> m(gpu_types.size(), 0);
  for (const Node& n : nodes)
    if (n.type < m.size()) m[n.type] += n.gpus;
  return m;
}

bool holds_gang_evenly(const std::vector<int>& node_gpus, int gang) {
  if (gang <= 0) return true;
  for (int k = 1; k <= gang && k <= static_cast<int>(node_gpus.size()); ++k) {
    if (gang % k != 0) continue;
    int nodes = 0;
    for (int g : node_gpus) nodes += g >= gang / k;
    if (nodes >= k) return true;
  }
  return false;
}

int Cluster::total_gpus() const {
  int total = 0;
  for (const Node& n : nodes) total += n.gpus;
  return total;
}

Cluster default_cluster() {
  constexpr int kNodesPerType = 3;
  constexpr int kGpusPerNode = 8;  // an 8-GPU job fits one node, as on DGX-style servers
  Cluster c;
  c.gpu_types = {"k80", "p100", "v100"};
  for (std::size_t t = 0; t < c.gpu_types.size(); ++t)
    for (int i = 0; i < kNodesPerType; ++i)
      c.nodes.push_back(Node{c.gpu_types[t] + "-" + std::to_string(i), t, kGpusPerNode, 64.0, 512.0});
  return c;
}

}  // namespace fairgpu
