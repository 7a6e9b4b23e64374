// Fairness property audit of a share allocation (docs/design.md §6; OEF, Mo et al.,
// Middleware '24, §2.3).
//
// Every property is checked between entities, the "virtual tenants" of OEF
// §4.2.4 (one per job type of a tenant, carrying an equal split of the
// tenant's weight). W_l is entity l's speedup vector, w_l its weight, x_l its
// row of X, m the capacity vector, and V_l(y) the most throughput l can draw
// from a bundle y: W_l . y, or under a demand the best d_l devices of y
// (ShareProblem::capped_value, a fractional knapsack), d_l being l's weight
// share of its tenant's demand (ShareProblem::entity_demand).
//
// - Envy-freeness (EF, §2.3.1 (2); the constraint of eq. 10c): no entity
//   prefers another's bundle. Ratio of l towards i:
//   V_l(x_i * w_l / w_i) / (W_l . x_l), with 0/0 = 1 and positive/0 = +inf.
//   The weight scaling is the replication of weighted OEF (§4.2.3): an entity
//   of weight 2 is two copies of weight 1, so a weight-1 entity compares itself
//   with half of its bundle. Entities of the same tenant are compared too, as
//   OEF's virtual tenants are. EF iff the max ratio <= 1 + tolerance.
// - Sharing incentive (SI, §2.3.1 (3); the bound of eq. 8): each entity gets
//   at least what its slice m * w_l / sum_i w_i of every type would give it.
//   Ratio (W_l . x_l) / V_l(m * w_l / sum w); SI iff the min >= 1 - tolerance.
// - Pareto efficiency (PE, §2.3.1 (4), in DRF's strong sense, not Gavel's
//   work conservation): nobody can gain without someone losing. One LP:
//   maximise sum_l W_l . x'_l over feasible X' (capacities, demands)
//   subject to W_l . x'_l >= W_l . x_l for every l, including entities with
//   nothing. Its optimum exceeds the audited total iff some entity can gain
//   at nobody's expense; pareto_improvement is that excess relative to the
//   audited total. PE iff it is <= tolerance.
// - Optimal efficiency (§2.3.2): the audited total sum_l W_l . x_l against
//   the total of the registered `max-sum-throughput` policy (eq. 4, with
//   demands), so the library has one definition of the efficiency bound.
//   efficiency_gap = 1 - total / max_total, clipped at 0.
// - Strategy-proofness (SP, §2.3.1 (1), the lies of §2.4 and Theorem 5.4):
//   an entity reports speedups no lower than the truth. The probe is a grid,
//   not a proof: for each entity l, each factor f in options.sp_factors and
//   each lie shape — every faster type (j >= 1) times f, and each single type
//   j >= 1 times f (with k = 2 the two shapes coincide and run once) — it
//   re-runs the policy on the misreport and values the new allocation with
//   the TRUE speedups. The gain is the relative change in the true throughput
//   of l's tenant (summed over its entities, since the tenant is who lies)
//   against the audited allocation, which is taken to be the policy's honest
//   answer. sp_max_gain is the max over the grid, negative when every lie
//   hurts; SP iff it is <= tolerance.
//
// Numerics: every tolerance is relative. Throughputs at most 1e-9 of the
// largest V_l(m) count as zero (LP noise), which is where 0/0 = 1 applies.
// The allocation must be feasible within the tolerance (check_feasible);
// an overuse inside the tolerance is scaled out of the PE floors so the LP
// stays feasible.
#include "fairgpu/audit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "policy/share_lp.h"

namespace fairgpu {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Relative slack on the PE floors so that LP round-off cannot make the
// audited allocation itself infeasible.
constexpr double kFloorSlack = 1e-9;

// num / den where values <= zero count as 0: 0/0 = 1, positive/0 = +inf.
double safe_ratio(double num, double den, double zero) {
  if (den <= zero) return num <= zero ? 1.0 : kInfinity;
  return num / den;
}

// True throughput of tenant t under x: the sum over its entities.
double tenant_throughput(const ShareProblem& p, const Matrix& x, std::size_t t) {
  double v = 0;
  for (std::size_t e : p.tenants[t].entities) v += p.throughput(e, x);
  return v;
}

// The largest throughput any entity could draw from the whole cluster: the
// scale below which a throughput is LP noise.
double zero_threshold(const ShareProblem& p) {
  double scale = 0;
  for (std::size_t e = 0; e < p.num_entities(); ++e)
    scale = std::max(scale, p.capped_value(e, p.capacity.data(), p.entity_demand(e)));
  return 1e-9 * std::max(scale, 1.0);
}

void audit_envy(const ShareProblem& p, const Matrix& x, double zero, const AuditOptions& o,
                AuditReport& r) {
  const std::size_t n = p.num_entities();
  double worst = 0;  // no pair at all: nobody to envy
  std::size_t worst_l = 0, worst_i = 0;
  for (std::size_t l = 0; l < n; ++l) {
    const double own = p.throughput(l, x);
    for (std::size_t i = 0; i < n; ++i) {
      if (i == l) continue;
      const double ratio = safe_ratio(p.envy_value(l, i, x), own, zero);
      if (ratio > worst) {
        worst = ratio;
        worst_l = l;
        worst_i = i;
      }
    }
  }
  r.max_envy_ratio = worst;
  r.envy_free = worst <= 1 + o.tolerance;
  if (!r.envy_free) r.envy_pair = p.entities[worst_l].name + " envies " + p.entities[worst_i].name;
}

void audit_sharing_incentive(const ShareProblem& p, const Matrix& x, double zero,
                             const AuditOptions& o, AuditReport& r) {
  const std::size_t n = p.num_entities();
  const double weights = p.total_weight();
  double worst = kInfinity;
  std::size_t worst_l = 0;
  for (std::size_t l = 0; l < n; ++l) {
    const double reference =
        p.capped_value(l, p.equal_share(l, weights).data(), p.entity_demand(l));
    const double ratio = safe_ratio(p.throughput(l, x), reference, zero);
    if (ratio < worst) {
      worst = ratio;
      worst_l = l;
    }
  }
  if (n == 0) worst = 1.0;  // vacuous
  r.min_sharing_incentive_ratio = worst;
  r.sharing_incentive = worst >= 1 - o.tolerance;
  if (n > 0) r.sharing_incentive_worst = p.entities[worst_l].name;
}

// Factor by which x exceeds a capacity or a demand (1 when within them).
double overuse(const ShareProblem& p, const Matrix& x) {
  double s = 1.0;
  for (std::size_t j = 0; j < p.num_types(); ++j) {
    if (!(p.capacity[j] > 0)) continue;
    double used = 0;
    for (std::size_t e = 0; e < p.num_entities(); ++e) used += x(e, j);
    s = std::max(s, used / p.capacity[j]);
  }
  for (std::size_t e = 0; e < p.num_entities(); ++e) {
    double cap = p.entity_demand(e);
    if (!std::isfinite(cap) || !(cap > 0)) continue;
    double held = 0;
    for (std::size_t j = 0; j < p.num_types(); ++j) held += x(e, j);
    s = std::max(s, held / cap);
  }
  return s;
}

void audit_pareto(const ShareProblem& p, const Matrix& x, double zero, const AuditOptions& o,
                  AuditReport& r) {
  const std::size_t n = p.num_entities(), k = p.num_types();
  // The floors come from x cleaned of the noise check_feasible lets through
  // (tiny negatives, a sliver of a type with no devices, an overuse within
  // the tolerance), so that x itself satisfies them.
  Matrix clean(n, k);
  for (std::size_t e = 0; e < n; ++e)
    for (std::size_t j = 0; j < k; ++j)
      clean(e, j) = p.capacity[j] > 0 ? std::max(0.0, x(e, j)) : 0.0;
  const double shrink = (1 - kFloorSlack) / overuse(p, clean);

  Matrix w = p.speedup_matrix();
  policy::ShareLp s = policy::build_share_lp(p, &w);
  for (std::size_t e = 0; e < n; ++e) {
    const double floor = p.throughput(e, clean) * shrink;
    if (floor > 0) policy::add_entity_row(s, e, w.row(e), floor, kInf);
  }
  policy::solve_or_throw(s.lp, "audit: Pareto-improvement LP");
  const double best = s.lp.objective_value();
  const double total = r.total_throughput;
  r.pareto_improvement =
      total > zero ? std::max(0.0, (best - total) / total) : (best > zero ? kInfinity : 0.0);
  r.pareto_efficient = r.pareto_improvement <= o.tolerance;
}

void audit_efficiency(const ShareProblem& p, double zero, const AuditOptions& o, AuditReport& r) {
  std::unique_ptr<SharePolicy> max_sum = make_share_policy("max-sum-throughput");
  if (!max_sum) throw std::logic_error("audit: policy max-sum-throughput is not registered");
  r.max_total_throughput = p.total_throughput(max_sum->allocate(p));
  r.efficiency_gap = r.max_total_throughput > zero
                         ? std::max(0.0, 1 - r.total_throughput / r.max_total_throughput)
                         : 0.0;
  r.optimal_efficiency = r.efficiency_gap <= o.tolerance;
}

void probe_strategy_proofness(const ShareProblem& p, const Matrix& x, const SharePolicy& policy,
                              double zero, const AuditOptions& o, AuditReport& r) {
  const std::size_t n = p.num_entities(), k = p.num_types();
  // Lie shapes: the set of inflated types. Shape 0 is every faster type; the
  // rest one type each, unless that repeats shape 0 (k == 2).
  std::vector<std::vector<std::size_t>> shapes;
  if (k >= 2) {
    shapes.emplace_back();
    for (std::size_t j = 1; j < k; ++j) shapes.back().push_back(j);
    if (k >= 3)
      for (std::size_t j = 1; j < k; ++j) shapes.push_back({j});
  }
  std::vector<std::string> shape_names;
  for (const auto& shape : shapes) {
    std::string name;
    for (std::size_t j : shape) name += (name.empty() ? "" : "+") + p.gpu_types[j];
    shape_names.push_back(std::move(name));
  }

  double best = -kInfinity;
  ShareProblem lie = p;
  for (std::size_t l = 0; l < n; ++l) {
    const std::size_t t = p.entities[l].tenant;
    const double honest = tenant_throughput(p, x, t);
    const std::vector<double>& truth = p.entities[l].speedup;
    for (double f : o.sp_factors) {
      for (std::size_t s = 0; s < shapes.size(); ++s) {
        lie.entities[l].speedup = truth;
        for (std::size_t j : shapes[s]) lie.entities[l].speedup[j] *= f;
        const double now = tenant_throughput(p, policy.allocate(lie), t);
        const double gain = honest > zero ? now / honest - 1 : (now > zero ? kInfinity : 0.0);
        if (gain > best) {
          best = gain;
          r.sp_best_lie = fmt::format("{} x{} on {}", p.entities[l].name, f, shape_names[s]);
        }
      }
    }
    lie.entities[l].speedup = truth;
  }
  r.sp_probed = true;
  r.sp_max_gain = best == -kInfinity ? 0.0 : best;  // nothing to misreport
  r.strategy_proof = r.sp_max_gain <= o.tolerance;
}

}  // namespace

AuditReport audit_allocation(const ShareProblem& p, const Matrix& x, const SharePolicy* policy,
                             const AuditOptions& options) {
  if (std::string err = check_feasible(p, x, options.tolerance); !err.empty())
    throw std::invalid_argument("audit: infeasible allocation: " + err);
  const double zero = zero_threshold(p);
  AuditReport r;
  r.total_throughput = p.total_throughput(x);
  audit_envy(p, x, zero, options, r);
  audit_sharing_incentive(p, x, zero, options, r);
  audit_pareto(p, x, zero, options, r);
  audit_efficiency(p, zero, options, r);
  if (policy && options.strategy_proofness_probe)
    probe_strategy_proofness(p, x, *policy, zero, options, r);
  return r;
}

}  // namespace fairgpu
