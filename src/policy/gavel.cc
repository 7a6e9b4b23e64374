// gavel — Gavel's heterogeneity-aware max-min fairness (Narayanan et al.,
// OSDI '20, §4.1 "Max-Min Fairness"; the allocation OEF §2.4 eq. 3 compares
// against):
//
//   max  min_l  W_l . x_l / (pi_l * W_l . (m/n))
//
// i.e. every entity's throughput normalised by what it would get from an equal
// 1/n split of every GPU type, scaled by its priority weight. We use the
// weighted equal split m * pi_l / sum(pi) as the reference; it differs from
// pi_l * m / n by the constant sum(pi)/n, which does not move the max-min
// point. Σ_j x_l^j is capped by the entity's demand (Gavel's scale factor / time
// fraction cap at job level; here the tenant's device count).
//
// Gavel's LP only maximises the minimum; Gavel's water-filling variant keeps
// raising the entities that are not bottlenecked. We do the same with
// progressive filling (share_lp.h): entities that cannot rise above the
// current level are frozen there, the rest continue, so what a capped entity
// cannot use goes to the others. Among allocations with these levels the last
// step picks the one with the highest total normalised throughput.
//
// At job level (one entity per job, demand = its workers) the simulator uses
// Gavel's LP as Gavel's implementation solves it: one max-min level, then the
// allocation with the most total normalised throughput at that level, so
// capacity the bottleneck jobs cannot use still goes to work. Two LPs instead
// of progressive filling's two per level: with hundreds of jobs capped at
// their gang size there are hundreds of levels.
#include "policy/share_lp.h"
#include "policy/share_policies.h"

namespace fairgpu::policy {
namespace {

Matrix gavel_utilities(const ShareProblem& p) {
  const double total_weight = p.total_weight();
  Matrix a(p.num_entities(), p.num_types());
  for (std::size_t e = 0; e < p.num_entities(); ++e) {
    const auto& w = p.entities[e].speedup;
    double equal_split = p.value(e, p.equal_share(e, total_weight).data());
    // An entity that can use none of the devices (equal split 0) has utility 0.
    for (std::size_t j = 0; j < p.num_types(); ++j)
      a(e, j) = equal_split > 0 ? w[j] / equal_split : 0.0;
  }
  return a;
}

class GavelSingleLevel final : public SharePolicy {
 public:
  std::string_view name() const override { return "gavel"; }

  Matrix allocate(const ShareProblem& p) const override {
    const Matrix a = gavel_utilities(p);
    ShareLp s = build_share_lp(p);
    int t = s.lp.add_variable(0.0, kInf, 1.0);
    for (std::size_t e = 0; e < p.num_entities(); ++e)
      add_entity_row(s, e, a.row(e), 0.0, kInf, t, 1.0);
    solve_or_throw(s.lp, "gavel max-min level");
    const double level = s.lp.value(t);
    Matrix c = p.speedup_matrix();
    ShareLp best = build_share_lp(p, &c);
    for (std::size_t e = 0; e < p.num_entities(); ++e)
      add_entity_row(best, e, a.row(e), level * (1 - 1e-7), kInf);
    solve_or_throw(best.lp, "gavel throughput at the max-min level");
    return extract_allocation(p, best);
  }
};

class Gavel final : public SharePolicy {
 public:
  std::string_view name() const override { return "gavel"; }

  Matrix allocate(const ShareProblem& p) const override {
    return progressive_filling(p, gavel_utilities(p), /*equal=*/false);
  }
};

}  // namespace

std::unique_ptr<SharePolicy> NewGavel() { return std::make_unique<Gavel>(); }
std::unique_ptr<SharePolicy> NewGavelSingleLevel() { return std::make_unique<GavelSingleLevel>(); }

}  // namespace fairgpu::policy
