// Seeded random share problems shared by the policy tests and benchmarks.
#pragma once

#include <random>
#include <string>

#include "fairgpu/share_problem.h"

namespace fairgpu::testing {

// n tenants, k types; speedups increasing along the type order (slowest first)
// with random steps in [0, 1.5) per type; capacities 1..8; optional random
// integer weights 1..3 and demands.
inline ShareProblem random_problem(std::uint32_t seed, std::size_t n, std::size_t k,
                                   bool weights = false, double demand_fraction = 0.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> step(0.0, 1.5), u(0, 1);
  std::uniform_int_distribution<int> cap(1, 8), wt(1, 3);
  ShareProblem p;
  for (std::size_t j = 0; j < k; ++j) {
    p.gpu_types.push_back("t" + std::to_string(j));
    p.capacity.push_back(cap(rng));
  }
  for (std::size_t l = 0; l < n; ++l) {
    std::vector<double> w{1.0};
    for (std::size_t j = 1; j < k; ++j) w.push_back(w.back() + step(rng));
    double weight = weights ? wt(rng) : 1.0;
    double demand = u(rng) < demand_fraction ? 0.5 + 3 * u(rng) : kNoDemand;
    p.add_tenant(std::string("u").append(std::to_string(l)), std::move(w), weight, demand);
  }
  return p;
}

}  // namespace fairgpu::testing
