// gandiva-fair: Gandiva_fair's heterogeneity-aware trading, as described by
// OEF §2.4 (Gandiva_fair itself: Chaudhary et al., EuroSys 2020).
//
// Start from the max-min split (max_min.cc: every entity gets one fraction of
// every GPU type, weights and demands respected), then trade greedily: a
// user that is accelerated little by the fast type sells fast share to a user
// that is accelerated a lot, for slow share, at a second-price rate. Every
// trade makes the seller strictly better off and the buyer no worse off, so
// the result is sharing-incentive with respect to the max-min split; it is
// neither envy-free nor strategy-proof (OEF §2.4 shows both with the example
// W = [[1,2],[1,3],[1,4]], which tests/share_baselines_test.cc reproduces).
//
// One trade on a pair of types (a slow, b fast), entities l with ratio
// r_l = W_l[b] / W_l[a]:
// - seller s: the entity with the lowest r that still holds b share and for
//   which a positive trade exists (below); ties by entity index;
// - buyers: entities with r > r_s that still hold a share; the buyer is the one
//   with the highest r (ties: lowest index);
// - price p (units of a per unit of b): the second-highest buyer's r when there
//   are two or more buyers, else the midpoint (r_buyer + r_s) / 2. A trade
//   happens only when r_s < p <= r_buyer: the seller gains f * W_s[a] * (p - r_s)
//   > 0 and the buyer gains f * W_buyer[a] * (r_buyer - p) >= 0;
// - size: the seller gives f units of b and receives p * f units of a, with f
//   as large as possible: f <= seller's b, f <= buyer's a / p, and, since a
//   trade changes device counts (the seller's by (p - 1) * f, the buyer's by
//   (1 - p) * f), f <= the growing side's demand headroom / |p - 1| when it
//   has a demand (ShareProblem::entity_demand: an entity's weight slice of its
//   tenant's demand).
// Repeat until no trade is possible. "Still holds" means more than 1e-12
// devices; a trade smaller than 1e-12 is not made.
//
// Generalisation to k types (OEF and the Gandiva_fair paper only show two),
// pair by pair: types are ordered slowest first; a sweep visits the pairs
// (a, b) with a < b in lexicographic order (0,1), (0,2), ..., (0,k-1), (1,2),
// ..., (k-2,k-1), and on each pair trades as above until that pair admits no
// trade. Sweeps repeat until a whole sweep makes no trade, or 10,000 trades
// have been made in total (a safety cap; every trade is Pareto-improving and
// feasible, so stopping early keeps sharing incentive and feasibility). Every
// pair-trade leaves every entity at least as well off, so the k-type result
// stays sharing-incentive. A pair whose "fast" type is slower for some entity
// (W[b] < W[a], r < 1) trades the same way; the price may then be below 1 and
// the buyer's device count is the one that grows.
//
// Other choices where the paper is silent:
// - Trading is between entities (OEF's virtual tenants, one per job type),
//   also between two job types of one tenant; weights do not enter the
//   trading (they already shaped the max-min split). Demands are per-entity
//   device caps as everywhere in fairgpu.
// - An entity with W[a] <= 0 has no finite ratio on pair (a, b) and does not
//   trade on it.
// - Capacity that max-min leaves idle (every entity at its demand) stays idle.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string_view>
#include <vector>

#include "policy/share_policies.h"

namespace fairgpu::policy {
namespace {

constexpr double kHoldEps = 1e-12;  // "still holds" and the smallest trade
constexpr int kMaxTrades = 10000;   // safety cap over all sweeps

class Trader {
 public:
  Trader(const ShareProblem& p, Matrix& x) : p_(p), x_(x), held_(p.num_entities(), 0.0) {
    for (std::size_t e = 0; e < p.num_entities(); ++e)
      for (std::size_t j = 0; j < p.num_types(); ++j) held_[e] += x(e, j);
  }

  // Sweeps the type pairs until one sweep makes no trade (or the cap is hit).
  void run() {
    const std::size_t k = p_.num_types();
    for (bool traded = true; traded && trades_ < kMaxTrades;) {
      traded = false;
      for (std::size_t a = 0; a + 1 < k; ++a)
        for (std::size_t b = a + 1; b < k; ++b)
          while (trades_ < kMaxTrades && trade_once(a, b)) {
            ++trades_;
            traded = true;
          }
    }
  }

 private:
  double ratio(std::size_t e, std::size_t a, std::size_t b) const {
    const auto& w = p_.entities[e].speedup;
    return w[a] > 0 ? w[b] / w[a] : std::numeric_limits<double>::quiet_NaN();
  }

  double headroom(std::size_t e) const {
    const double d = p_.entity_demand(e);
    return std::isfinite(d) ? std::max(0.0, d - held_[e]) : kNoDemand;
  }

  // Makes the one trade the rules above pick on pair (a, b); false if none.
  bool trade_once(std::size_t a, std::size_t b) {
    const std::size_t n = p_.num_entities();
    std::vector<double> r(n);
    for (std::size_t e = 0; e < n; ++e) r[e] = ratio(e, a, b);
    // Sellers in order of increasing r, ties by index. n is small (tenants x
    // job types), so a selection scan per candidate is fine.
    std::vector<bool> tried(n, false);
    for (;;) {
      std::size_t s = n;
      for (std::size_t e = 0; e < n; ++e) {
        if (tried[e] || std::isnan(r[e]) || x_(e, b) <= kHoldEps) continue;
        if (s == n || r[e] < r[s]) s = e;
      }
      if (s == n) return false;
      tried[s] = true;

      // Buyer (highest r) and second-highest buyer, ties by lowest index.
      std::size_t best = n, second = n;
      for (std::size_t e = 0; e < n; ++e) {
        if (e == s || std::isnan(r[e]) || !(r[e] > r[s]) || x_(e, a) <= kHoldEps) continue;
        if (best == n || r[e] > r[best]) {
          second = best;
          best = e;
        } else if (second == n || r[e] > r[second]) {
          second = e;
        }
      }
      if (best == n) continue;
      const double price = second != n ? r[second] : 0.5 * (r[best] + r[s]);
      if (!(r[s] < price && price <= r[best]) || !(price > 0)) continue;

      double f = x_(s, b);
      bool seller_out = true, buyer_out = false;
      if (x_(best, a) / price <= f) {
        f = x_(best, a) / price;
        seller_out = false;
        buyer_out = true;
      }
      // The side whose device count grows must stay within its demand.
      double limit = kNoDemand;
      if (price > 1) limit = headroom(s) / (price - 1);
      if (price < 1) limit = headroom(best) / (1 - price);
      if (limit < f) {
        f = limit;
        seller_out = buyer_out = false;
      }
      if (!(f > kHoldEps)) continue;

      x_(s, b) = seller_out ? 0.0 : x_(s, b) - f;
      x_(best, b) += f;
      x_(s, a) += price * f;
      x_(best, a) = buyer_out ? 0.0 : x_(best, a) - price * f;
      held_[s] += (price - 1) * f;
      held_[best] += (1 - price) * f;
      return true;
    }
  }

  const ShareProblem& p_;
  Matrix& x_;
  std::vector<double> held_;  // devices per entity
  int trades_ = 0;
};

class GandivaFairPolicy final : public SharePolicy {
 public:
  std::string_view name() const override { return "gandiva-fair"; }

  Matrix allocate(const ShareProblem& p) const override {
    Matrix x = NewMaxMin()->allocate(p);
    if (p.num_types() < 2 || p.num_entities() < 2) return x;
    Trader(p, x).run();
    return x;
  }
};

}  // namespace

std::unique_ptr<SharePolicy> NewGandivaFair() { return std::make_unique<GandivaFairPolicy>(); }

}  // namespace fairgpu::policy
