// A toy profile and cluster for hand-derived simulator tests: figures small
// enough to follow in a comment.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fairgpu/cluster.h"
#include "fairgpu/profile.h"
#include "fairgpu/sim_result.h"
#include "fairgpu/workload.h"

namespace fairgpu::toy {

// Job type "a": 1 it/s per worker on "slow", 3 on "fast"; 2 workers 1.8 and
// 5.4 (efficiency 0.9), 4 workers 3.2 and 9.6 (0.8); spread over nodes x0.5.
// Job type "b": 1 it/s on slow, 1.5 on fast.
inline ProfileCatalogue toy_profiles() {
  ProfileCatalogue c;
  c.source = "toy";
  JobTypeProfile a;
  a.name = "a";
  a.consolidated["slow"] = {{1, 1.0}, {2, 1.8}, {4, 3.2}};
  a.consolidated["fast"] = {{1, 3.0}, {2, 5.4}, {4, 9.6}};
  a.cross_node_factor = 0.5;
  JobTypeProfile b;
  b.name = "b";
  b.consolidated["slow"] = {{1, 1.0}};
  b.consolidated["fast"] = {{1, 1.5}};
  c.job_types = {a, b};
  return c;
}

// Nodes as (type, gpus); types "slow" and "fast".
inline Cluster toy_cluster(std::vector<std::pair<std::string, int>> nodes) {
  Cluster c;
  c.gpu_types = {"slow", "fast"};
  for (std::size_t i = 0; i < nodes.size(); ++i)
    c.nodes.push_back({"n" + std::to_string(i), *c.type_index(nodes[i].first), nodes[i].second,
                       8.0, 64.0});
  return c;
}

inline JobSpec job(std::string id, std::string tenant, std::string type, int workers, double arrival,
            double iterations, double weight = 1.0) {
  JobSpec j;
  j.id = std::move(id);
  j.tenant = std::move(tenant);
  j.job_type = std::move(type);
  j.workers = workers;
  j.arrival_s = arrival;
  j.iterations = iterations;
  j.weight = weight;
  return j;
}

inline Workload workload(std::vector<JobSpec> jobs) {
  Workload w;
  for (const auto& j : jobs) {
    bool known = false;
    for (const auto& t : w.tenants) known |= t.name == j.tenant;
    if (!known) w.tenants.push_back({j.tenant, 1.0});
  }
  w.jobs = std::move(jobs);
  return w;
}

inline const JobRecord& rec(const SimResult& r, const std::string& id) {
  for (const auto& j : r.jobs)
    if (j.id == id) return j;
  throw std::out_of_range(id);
}

}  // namespace fairgpu::toy
