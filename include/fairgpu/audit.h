// Fairness property audit of a share allocation (docs/design.md §6, OEF §2.3.1).
//
// Properties are checked between entities (virtual tenants), where OEF states
// them. With weights, entity l's view of entity i's bundle is scaled by
// weight_l / weight_i (the replication of OEF §4.2.3). With a demand cap, an
// entity values a bundle by the most it could draw from it with at most its
// demand in devices (ShareProblem::capped_value); with neither, the definitions
// reduce to the ones in docs/design.md §6.
#pragma once

#include <string>
#include <vector>

#include "fairgpu/policy.h"
#include "fairgpu/share_problem.h"

namespace fairgpu {

struct AuditOptions {
  double tolerance = 1e-6;  // relative slack before a property counts as violated
  bool strategy_proofness_probe = true;
  // Inflation factors applied to an entity's reported speedups on faster types.
  std::vector<double> sp_factors = {1.1, 1.25, 1.5, 2.0, 3.0};
};

struct AuditReport {
  // Envy-freeness: max over l != i of V_l(x_i * w_l / w_i) / (W_l . x_l).
  double max_envy_ratio = 0;
  std::string envy_pair;  // "a envies b" for the worst pair, empty if none
  bool envy_free = false;
  // Sharing incentive: min over l of (W_l . x_l) / V_l(m * w_l / sum w).
  double min_sharing_incentive_ratio = 0;
  std::string sharing_incentive_worst;
  bool sharing_incentive = false;
  // Pareto efficiency: the largest total throughput with nobody worse off,
  // relative to the audited total (0 when Pareto-efficient).
  double pareto_improvement = 0;
  bool pareto_efficient = false;
  // Efficiency: total normalised throughput vs max-sum-throughput's.
  double total_throughput = 0;
  double max_total_throughput = 0;
  double efficiency_gap = 0;  // 1 - total / max_total
  bool optimal_efficiency = false;
  // Strategy-proofness probe (only when a policy is given and the probe is on).
  bool sp_probed = false;
  double sp_max_gain = 0;       // relative gain in true throughput of the best lie
  std::string sp_best_lie;      // who lied, how
  bool strategy_proof = false;  // no lie on the grid gained more than tolerance
};

// Audits allocation x for problem p. `policy` is used by the SP probe (which
// re-runs it on misreported speedups); pass nullptr to skip the probe. The
// probe takes x to be the policy's honest answer and measures gains against it.
// Throws std::invalid_argument when x fails check_feasible(p, x,
// options.tolerance); efficiency is measured against the registered
// `max-sum-throughput` policy.
AuditReport audit_allocation(const ShareProblem& p, const Matrix& x, const SharePolicy* policy,
                             const AuditOptions& options = {});

}  // namespace fairgpu
