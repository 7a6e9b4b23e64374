// oef-noncoop — OEF in non-cooperative environments (Mo, Xu, Lau, Middleware
// '24, §4.2.1, eq. 9a-9c), weighted (§4.2.3) and per job type (§4.2.4).
//
//   max  sum_l W_l . x_l   s.t.  sum_l x_l^j <= m_j,   W_l . x_l / pi_l equal for all l
//
// Replicating a tenant's speedup vector pi_l times (§4.2.3) and letting the
// replicas share equally is the same as asking W_l . x_l = pi_l * t, which also
// gives non-integer weights a meaning. With every throughput tied to t the
// objective is t * sum(pi), so the LP is "the largest t every entity reaches".
//
// How it is solved. The plain LP has n*k variables and n equality rows. We
// solve the same LP by Dantzig-Wolfe column generation over k rows: a column
// is an assignment a of every entity to one GPU type; using it at rate nu_a
// gives entity l  pi_l * nu_a / W_l[a(l)]  devices of type a(l), i.e. pi_l * nu_a
// of throughput, and costs c_a^j = sum_{l: a(l)=j} pi_l / W_l[j] devices of
// type j. Every feasible x is a mixture of such assignments, so
//   max sum_a nu_a   s.t.  sum_a c_a^j nu_a <= m_j
// is the same LP (t = sum nu). Pricing under the capacity duals p is separable:
// each entity picks argmin_j p_j / W_l[j]; a column enters while
// sum_l pi_l min_j p_j / W_l[j] < 1. The master has k rows, so a solve costs
// O(n k) per pricing round instead of a simplex over n rows.
//
// Demands (not in the paper): a tenant's demand caps its devices. If the
// uncapped optimum already respects every demand it is optimal; otherwise the
// policy falls back to progressive filling with equality (share_lp.h):
// entities rise together at equal normalised throughput, those held back by
// their demand are frozen, the rest continue — so a small tenant never drags
// the others down.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "fairgpu/lp.h"
#include "policy/share_lp.h"
#include "policy/share_policies.h"

namespace fairgpu::policy {
namespace {

constexpr std::size_t kMaxColumns = 100000;
// Stop when the best upper bound m.q / F(q) is within this relative gap of
// the master's value: CLP solves the master to ~1e-7 dual feasibility, so a
// tighter gap only makes the column generation tail off (measured without
// smoothing: stuck at 1 - 5e-8 for thousands of columns).
constexpr double kOptimalityGap = 1e-7;
constexpr double kSmoothing = 0.8;  // Wentges' alpha: weight of the stability centre

class OefNonCooperative final : public SharePolicy {
 public:
  std::string_view name() const override { return "oef-noncoop"; }

  Matrix allocate(const ShareProblem& p) const override {
    Matrix x = column_generation(p);
    if (p.has_demands() && !check_feasible(p, x, 1e-9).empty()) {
      Matrix a(p.num_entities(), p.num_types());
      for (std::size_t e = 0; e < p.num_entities(); ++e)
        for (std::size_t j = 0; j < p.num_types(); ++j)
          a(e, j) = p.entities[e].speedup[j] / p.entities[e].weight;
      return progressive_filling(p, a, /*equal=*/true);
    }
    return x;
  }

 private:
  static Matrix column_generation(const ShareProblem& p) {
    const std::size_t n = p.num_entities(), k = p.num_types();
    // Each column: the type every entity is assigned to.
    std::vector<std::vector<std::uint16_t>> columns;
    LinearProgram master;
    master.maximize();
    std::vector<int> rows;
    for (std::size_t j = 0; j < k; ++j)
      rows.push_back(master.add_constraint({}, {}, -kInf, p.capacity[j]));

    auto add_column = [&](const std::vector<std::uint16_t>& assign) {
      std::vector<double> cost(k, 0.0);
      for (std::size_t l = 0; l < n; ++l)
        cost[assign[l]] += p.entities[l].weight / p.entities[l].speedup[assign[l]];
      std::vector<int> r;
      std::vector<double> c;
      for (std::size_t j = 0; j < k; ++j) {
        if (cost[j] == 0) continue;
        r.push_back(rows[j]);
        c.push_back(cost[j]);
      }
      master.add_column(0.0, kInf, 1.0, r, c);
      columns.push_back(assign);
    };

    // Start from "everyone on type j" for each type with capacity (entities
    // that cannot use j go to their fastest type): their mixture is the
    // proportional split, a feasible start for any capacities.
    for (std::size_t j = 0; j < k; ++j) {
      if (p.capacity[j] <= 0) continue;
      std::vector<std::uint16_t> assign(n);
      for (std::size_t l = 0; l < n; ++l) {
        const auto& w = p.entities[l].speedup;
        assign[l] = static_cast<std::uint16_t>(
            w[j] > 0 ? j : std::max_element(w.begin(), w.end()) - w.begin());
      }
      add_column(assign);
    }

    // Pricing: each entity's cheapest type per unit of throughput under
    // prices q; returns F(q) = sum_l pi_l min_j q_j / W_l^j.
    std::vector<std::uint16_t> assign(n);
    auto price_out = [&](const std::vector<double>& q) {
      double f = 0;
      for (std::size_t l = 0; l < n; ++l) {
        const auto& w = p.entities[l].speedup;
        double best = std::numeric_limits<double>::infinity();
        std::size_t best_j = 0;
        for (std::size_t j = 0; j < k; ++j) {
          if (!(w[j] > 0) || p.capacity[j] <= 0) continue;
          double c = q[j] / w[j];
          if (c < best) best = c, best_j = j;
        }
        assign[l] = static_cast<std::uint16_t>(best_j);
        f += p.entities[l].weight * best;
      }
      return f;
    };
    auto dot = [&](const std::vector<double>& q, const std::vector<double>& v) {
      double s = 0;
      for (std::size_t j = 0; j < k; ++j) s += q[j] * v[j];
      return s;
    };

    // Plain column generation tails off (thousands of columns at n = 10,000),
    // so prices are smoothed (Wentges): price at a point between the master's
    // duals and the best dual point found so far (the stability centre). Any
    // prices q bound the optimum from above: t* <= m.q / F(q); the master's
    // value t is a lower bound; stop when they meet within kOptimalityGap.
    std::vector<double> duals(k), centre, trial(k);
    double centre_bound = std::numeric_limits<double>::infinity();
    while (columns.size() < kMaxColumns) {
      solve_or_throw(master, "oef-noncoop master");
      double t = master.objective_value();
      for (std::size_t j = 0; j < k; ++j) duals[j] = std::max(0.0, master.dual(rows[j]));
      if (centre.empty()) centre = duals;
      bool added = false;
      for (double alpha = kSmoothing; !added; alpha = alpha > 0.01 ? alpha / 2 : 0.0) {
        for (std::size_t j = 0; j < k; ++j) trial[j] = alpha * centre[j] + (1 - alpha) * duals[j];
        double f = price_out(trial);
        double bound = f > 0 ? dot(trial, p.capacity) / f : std::numeric_limits<double>::infinity();
        if (bound < centre_bound) centre_bound = bound, centre = trial;
        if (centre_bound <= t * (1 + kOptimalityGap)) break;
        // Does the column priced at `trial` improve the master (duals)?
        double reduced = 1.0;
        for (std::size_t l = 0; l < n; ++l)
          reduced -= p.entities[l].weight * duals[assign[l]] / p.entities[l].speedup[assign[l]];
        if (reduced > 1e-12) {
          add_column(assign);
          added = true;
        } else if (alpha == 0.0) {
          break;  // the master's own duals price out nothing: optimal
        }
      }
      if (!added) break;
    }
    Matrix x(n, k);
    for (std::size_t a = 0; a < columns.size(); ++a) {
      double nu = master.value(static_cast<int>(a));
      if (nu <= 0) continue;
      for (std::size_t l = 0; l < n; ++l) {
        std::size_t j = columns[a][l];
        x(l, j) += p.entities[l].weight * nu / p.entities[l].speedup[j];
      }
    }
    return x;
  }
};

}  // namespace

std::unique_ptr<SharePolicy> NewOefNonCooperative() {
  return std::make_unique<OefNonCooperative>();
}

}  // namespace fairgpu::policy
