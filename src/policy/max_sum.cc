// max-sum-throughput: efficiency only, no fairness (OEF §3.1.1, eq. 4).
//
//   maximise  sum_l sum_j w_l^j x_l^j   s.t.  sum_l x_l^j <= m_j  for every type j.
//
// The paper uses it to show that pure efficiency is unfair (a slow tenant may
// get nothing); fairgpu uses it as the efficiency upper bound that the fair
// policies are measured against.
//
// Choices where the paper is silent:
// - Tenant demands (a cap on a tenant's total devices over its entities) are
//   respected, so the bound is the best any policy could reach on the same
//   input; eq. 4 itself has no demands.
// - Weights do not enter: efficiency counts every unit of throughput the same.
// - The optimum is usually not unique (e.g. the slow type is worth 1 to every
//   entity); the allocation returned is whichever optimal vertex CLP finds.
#include <memory>
#include <string_view>

#include "policy/share_lp.h"
#include "policy/share_policies.h"

namespace fairgpu::policy {
namespace {

class MaxSumThroughputPolicy final : public SharePolicy {
 public:
  std::string_view name() const override { return "max-sum-throughput"; }

  Matrix allocate(const ShareProblem& p) const override {
    if (p.num_entities() == 0) return Matrix(0, p.num_types());
    Matrix w = p.speedup_matrix();
    ShareLp s = build_share_lp(p, &w);
    solve_or_throw(s.lp, "max-sum-throughput");
    return extract_allocation(p, s);
  }
};

}  // namespace

std::unique_ptr<SharePolicy> NewMaxSumThroughput() {
  return std::make_unique<MaxSumThroughputPolicy>();
}

}  // namespace fairgpu::policy
