// Building blocks shared by the LP-based share policies: the allocation
// variables x_l^j with the capacity (9b/10b) and demand rows, and progressive
// filling (water-filling) of per-entity linear utilities.
#pragma once

#include <vector>

#include "fairgpu/lp.h"
#include "fairgpu/share_problem.h"

namespace fairgpu::policy {

struct ShareLp {
  LinearProgram lp;
  std::size_t k = 0;
  std::vector<int> x;  // x[e * k + j]: variable of entity e on type j
  int var(std::size_t e, std::size_t j) const { return x[e * k + j]; }
};

// x >= 0 with objective coefficient `objective(e, j)` (a Matrix, or empty for
// zero), sum_l x_l^j <= m_j, and sum_j x_l^j <= entity_demand(l) where the
// tenant gave a demand. The LP is a maximisation.
ShareLp build_share_lp(const ShareProblem& p, const Matrix* objective = nullptr);

// Adds  sum_j coef[j] * x_e^j  - rhs_var_coef * rhs_var  in [lower, upper]
// (rhs_var < 0 means none).
int add_entity_row(ShareLp& s, std::size_t e, const double* coef, double lower, double upper,
                   int rhs_var = -1, double rhs_var_coef = 0.0);

Matrix extract_allocation(const ShareProblem& p, const ShareLp& s);

// Progressive filling of utilities u_e(x) = a_e . x_e (a: entity x type):
// raise a common level t for every entity not yet frozen, as high as the
// capacities and demands allow; entities that cannot rise above it any more
// (an LP test) are frozen at it; repeat with the rest. With `equal` the
// entities of one level get exactly that level (OEF non-cooperative); without
// it, at least that level (max-min). The last step maximises total normalised
// throughput sum_e W_e . x_e subject to the levels found.
Matrix progressive_filling(const ShareProblem& p, const Matrix& a, bool equal);

// True if progressive filling can stop after the first level: without demands
// and with every speedup positive, any capacity left at the max-min level
// could raise everyone, so nobody can rise alone.
bool single_level_suffices(const ShareProblem& p);

// Solves and throws std::runtime_error unless optimal (a bug, not bad input:
// every model built here is feasible and bounded).
void solve_or_throw(LinearProgram& lp, const char* what, const LpSolveOptions& o = {});

}  // namespace fairgpu::policy
