// Independent reference formulations for the tests and benchmarks: the OEF
// LPs written out in full (n^2 envy rows, n equality rows), built directly on
// the LP layer without any of the policies' shortcuts.
#pragma once

#include <cmath>
#include <stdexcept>

#include "fairgpu/lp.h"
#include "fairgpu/share_problem.h"

namespace fairgpu::reference {

struct FullLp {
  LinearProgram lp;
  std::vector<int> x;  // x[e * k + j]
};

// x >= 0, capacity rows, entity demand rows, objective sum W_l . x_l.
inline FullLp base(const ShareProblem& p) {
  FullLp f;
  std::size_t k = p.num_types();
  f.lp.maximize();
  for (std::size_t e = 0; e < p.num_entities(); ++e)
    for (std::size_t j = 0; j < k; ++j)
      f.x.push_back(f.lp.add_variable(0, kInf, p.entities[e].speedup[j]));
  for (std::size_t j = 0; j < k; ++j) {
    std::vector<int> v;
    std::vector<double> c;
    for (std::size_t e = 0; e < p.num_entities(); ++e) v.push_back(f.x[e * k + j]), c.push_back(1);
    f.lp.add_constraint(v, c, -kInf, p.capacity[j]);
  }
  for (std::size_t e = 0; e < p.num_entities(); ++e) {
    if (!std::isfinite(p.entity_demand(e))) continue;
    std::vector<int> v;
    std::vector<double> c;
    for (std::size_t j = 0; j < k; ++j) v.push_back(f.x[e * k + j]), c.push_back(1);
    f.lp.add_constraint(v, c, -kInf, p.entity_demand(e));
  }
  return f;
}

// OEF eq. 10 with weights: W_l.x_l / pi_l >= W_l.x_i / pi_i for every pair.
// Returns the optimal total normalised throughput.
inline double full_coop_total(const ShareProblem& p, LpSolveOptions o = {}) {
  FullLp f = base(p);
  std::size_t k = p.num_types(), n = p.num_entities();
  for (std::size_t l = 0; l < n; ++l) {
    for (std::size_t i = 0; i < n; ++i) {
      if (i == l) continue;
      std::vector<int> v;
      std::vector<double> c;
      for (std::size_t j = 0; j < k; ++j) {
        double w = p.entities[l].speedup[j];
        v.push_back(f.x[l * k + j]), c.push_back(w / p.entities[l].weight);
        v.push_back(f.x[i * k + j]), c.push_back(-w / p.entities[i].weight);
      }
      f.lp.add_constraint(v, c, 0, kInf);
    }
  }
  if (f.lp.solve(o) != LpStatus::kOptimal) throw std::runtime_error("reference coop LP failed");
  return f.lp.objective_value();
}

// OEF eq. 9 with weights: W_l.x_l = pi_l * t for every l. Returns the total.
inline double full_noncoop_total(const ShareProblem& p, LpSolveOptions o = {}) {
  FullLp f = base(p);
  std::size_t k = p.num_types(), n = p.num_entities();
  int t = f.lp.add_variable(0, kInf, 0);
  for (std::size_t l = 0; l < n; ++l) {
    std::vector<int> v;
    std::vector<double> c;
    for (std::size_t j = 0; j < k; ++j)
      v.push_back(f.x[l * k + j]), c.push_back(p.entities[l].speedup[j]);
    v.push_back(t), c.push_back(-p.entities[l].weight);
    f.lp.add_constraint(v, c, 0, 0);
  }
  if (f.lp.solve(o) != LpStatus::kOptimal) throw std::runtime_error("reference noncoop LP failed");
  return f.lp.objective_value();
}

}  // namespace fairgpu::reference
