// max-min: heterogeneity-unaware weighted max-min fairness (OEF §2.3.3 and
// §2.4, the "max-min fairness" that Gandiva_fair starts from).
//
// Speedups are ignored (every GPU counts as 1), so the policy only decides what
// fraction f_l of the cluster entity l gets, and gives it that fraction of
// every GPU type: x_l = f_l * m. Without demands this is the weighted equal
// split f_l = weight_l / sum of weights (m/n for equal weights).
//
// Choices where the paper is silent:
// - Entities are OEF's virtual tenants (§4.2.4): a tenant with several job
//   types has one entity per type, each with an equal slice of the tenant's
//   weight and the same slice of its demand (ShareProblem::entity_demand), so
//   filling entities is the same as filling tenants and splitting each
//   tenant's fraction equally among its job types.
// - Demands: weighted progressive filling of f_l / weight_l, with entity l
//   capped at f_l * sum_j m_j <= entity_demand(l). Entities rise together in
//   proportion to their weights; one that reaches its demand stops and the
//   others go on, until sum_l f_l = 1. Computed in closed form (sort entities
//   by cap_l / weight_l), no LP.
// - If every entity is capped, the leftover capacity stays idle: this policy
//   never hands anyone more than its max-min fraction of any one type.
// - An entity with weight <= 0 gets nothing.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string_view>
#include <vector>

#include "policy/share_policies.h"

namespace fairgpu::policy {
namespace {

// f_l for every entity: weighted water-filling with caps entity_demand / sum m.
std::vector<double> entity_fractions(const ShareProblem& p) {
  const std::size_t n = p.num_entities();
  const double total = p.total_capacity();
  std::vector<double> f(n, 0.0), cap(n, 0.0);
  std::vector<std::size_t> order;
  for (std::size_t e = 0; e < n; ++e) {
    if (!(p.entities[e].weight > 0)) continue;
    const double d = p.entity_demand(e);
    cap[e] = std::isfinite(d) ? std::max(0.0, d) / total : kNoDemand;
    order.push_back(e);
  }
  auto weight = [&](std::size_t e) { return p.entities[e].weight; };
  // Tightest cap per unit of weight first; ties by entity index.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return cap[a] / weight(a) < cap[b] / weight(b);
  });
  // Suffix sums of weights, so the weight still rising is never a difference of
  // rounded numbers.
  std::vector<double> weight_left(order.size() + 1, 0.0);
  for (std::size_t i = order.size(); i-- > 0;)
    weight_left[i] = weight_left[i + 1] + weight(order[i]);

  double left = 1.0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const double level = left / weight_left[i];  // fraction per unit of weight
    const std::size_t e = order[i];
    if (cap[e] <= level * weight(e)) {
      f[e] = cap[e];
      left = std::max(0.0, left - cap[e]);
      continue;
    }
    // Sorted by cap / weight: nobody after e is capped at this level either.
    for (std::size_t r = i; r < order.size(); ++r) f[order[r]] = level * weight(order[r]);
    break;
  }
  return f;
}

class MaxMinPolicy final : public SharePolicy {
 public:
  std::string_view name() const override { return "max-min"; }

  Matrix allocate(const ShareProblem& p) const override {
    const std::size_t k = p.num_types();
    Matrix x(p.num_entities(), k);
    if (p.num_entities() == 0 || !(p.total_capacity() > 0)) return x;
    const std::vector<double> f = entity_fractions(p);
    for (std::size_t e = 0; e < p.num_entities(); ++e)
      for (std::size_t j = 0; j < k; ++j) x(e, j) = f[e] * p.capacity[j];
    return x;
  }
};

}  // namespace

std::unique_ptr<SharePolicy> NewMaxMin() { return std::make_unique<MaxMinPolicy>(); }

}  // namespace fairgpu::policy
