// oef-coop — OEF in cooperative environments (Mo, Xu, Lau, Middleware '24,
// §4.2.2, eq. 10a-10c), weighted (§4.2.3) and per job type (§4.2.4).
//
//   max  sum_l W_l . x_l   s.t.  sum_l x_l^j <= m_j,
//        W_l . x_l / pi_l >= W_l . x_i / pi_i   for every pair (l, i)      (10c)
//
// Weights: replicating tenant l pi_l times and letting replicas share equally
// turns 10c into the weighted rows above, which also covers non-integer pi.
// Theorem 5.1: EF plus full use of capacity gives sharing incentive.
//
// Scaling past the n^2 envy rows (the leads, each checked against the
// full LP in tests/oef_test.cc):
//  1. Entities with identical speedup vectors (and no demand) are merged into
//     one group whose weight is their total; by convexity and symmetry some
//     optimum splits a group's bundle in proportion to weight, and that split
//     keeps every envy row (a group member's view is a weighted average).
//  2. Envy rows are generated lazily: start with the rows between neighbours
//     in speedup order (Theorem 5.2's adjacency for two types); solve, add
//     for every entity its 2 most violated rows together with their reverse
//     rows, delete the envy rows whose dual is zero, re-solve from the
//     previous basis (dual simplex), until no row is violated. The result
//     satisfies all n^2 rows and so is optimal for the full LP.
//
// Why this shape (uniform random_problem(2, n, 10), 2-core machine; times
// are noisy, iteration counts are not): the optimum pools entities, many get
// the same single-type bundle, and what binds is envy *inside* a pool (n =
// 400: 611 of 688 rows with a nonzero dual join two equal bundles), between
// entities that are far apart in speedup space. So
//  - reverse rows: l envies i's larger share of the type both hold; l -> i
//    with i -> l pins the pair to equal shares at once. Without them, with
//    purging, n = 1000 took 2049 rounds;
//  - purging rows with zero dual after every solve keeps the LP at ~5k rows
//    instead of ~27k (n = 1000), which is what each simplex iteration costs;
//    rows are only purged after a solve that strictly lowered the total, so
//    the loop cannot cycle (the total never rises and only finitely many row
//    sets exist). A zero-dual row may be tight; CLP repairs the basis;
//  - seeds beyond the chain: 8 nearest neighbours in log-speedup space made
//    the first solve 11.7k iterations (9.8k rows) for rows that were mostly
//    purged right after; the chain alone needs 1.8k;
//  - exact dual steepest edge (LpSolveOptions) halves the iterations.
//  Before: n = 200 / 400 / 1000 in 2.5 / 5.5-11 / 67-120 s (16 rounds of
//  10k-27k rows); now 0.45 / 2.2 / 11-15 s (seeds 2-4; ~35 rounds, ~21k
//  iterations).
//  Tried and dropped: utility variables u_l = W_l.x_l (rows of k+1 instead
//  of 2k nonzeros: same iterations, no faster); one row per distinct target
//  bundle; CLP perturbation, scaling, factorisation frequency, primal or
//  barrier for the first solve (no gain or 6x slower); generating the x
//  columns lazily too (more rounds, 2x slower on n = 400).
//
// Demands (not in the paper). An entity capped at d devices values a bundle y
// by V_l(y), the most it can draw from y with d devices, so it does not envy
// bundles it could not use — otherwise a small tenant would drag everyone
// down to its size. "W_l.x_l >= V_l(y)" is not convex in (x_l, y); we use
// V_l(y) = min over v in {0} U {W_l^j} of  sum_j max(0, W_l^j - v) y_j + v d
// and keep, per pair, one v: a linear row that implies the capped envy row.
// Rows are first linearised at the capped equal split x0 (every entity takes
// the best d devices of its own weighted share m*pi_l/sum(pi)), which
// satisfies all of them, so the LP is always feasible; then the rows are
// re-linearised at the current optimum and re-solved while that improves
// total throughput (each step keeps the previous optimum feasible). With
// demands sharing incentive is stated explicitly: W_l.x_l >= V_l(m*pi_l/sum pi).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

#include "fairgpu/lp.h"
#include "policy/share_lp.h"
#include "policy/share_policies.h"

namespace fairgpu::policy {
namespace {

// Measured on uniform random n = 1000, k = 10: 3 rows per entity per round
// let the LP grow to 25k rows and ran 2x slower than 2.
constexpr std::size_t kRowsPerEntityPerRound = 2;
// Re-linearisation rounds with demands: each keeps the previous optimum
// feasible, and the first two give most of the gain; the simulator solves
// these problems on many arrivals, where 20 rounds cost 5x the time for ~1%
// more throughput (measured: 100 tenants on 256 GPUs, 1,000 jobs).
constexpr int kRelinearisationRounds = 2;
constexpr double kTol = 1e-9;

// Entities merged by identical speedup vectors (uncapped only).
struct Grouping {
  ShareProblem reduced;
  std::vector<std::vector<std::size_t>> members;  // reduced entity -> original entities
};

Grouping group_identical(const ShareProblem& p) {
  Grouping g;
  g.reduced.gpu_types = p.gpu_types;
  g.reduced.capacity = p.capacity;
  std::map<std::vector<double>, std::size_t> index;
  for (std::size_t e = 0; e < p.num_entities(); ++e) {
    const ShareEntity& ent = p.entities[e];
    double cap = p.entity_demand(e);
    if (std::isfinite(cap)) {
      g.reduced.add_tenant(ent.name, ent.speedup, ent.weight, cap);
      g.members.push_back({e});
      continue;
    }
    auto [it, inserted] = index.try_emplace(ent.speedup, g.reduced.num_entities());
    if (inserted) {
      g.reduced.add_tenant(ent.name, ent.speedup, ent.weight);
      g.members.push_back({e});
    } else {
      std::size_t r = it->second;
      g.reduced.entities[r].weight += ent.weight;
      g.reduced.tenants[g.reduced.entities[r].tenant].weight += ent.weight;
      g.members[r].push_back(e);
    }
  }
  return g;
}

// What a remembering policy carries from one solve to the next. Entities
// are named by their kind, the interned id of their speedup vector (the same
// kinds recur from problem to problem), and an envy row by its pair of kinds.
using Kind = std::uint32_t;
using KindPair = std::uint64_t;
KindPair kind_pair(Kind envier, Kind envied) { return (KindPair{envier} << 32) | envied; }

// The basis of an earlier uncapped solve, by meaning, so that it carries over
// to a problem with other entities, weights and capacities: x columns by
// kind, capacity rows by type, envy rows by kind pair.
struct KeyedBasis {
  std::unordered_map<Kind, std::vector<BasisStatus>> columns;
  std::vector<BasisStatus> capacity;
  std::unordered_map<KindPair, BasisStatus> envy;
};

struct Carried {
  std::vector<KindPair> seeds;        // envy rows that bound recent optima
  const KeyedBasis* basis = nullptr;  // where to start the simplex from
};

class CoopSolver {
 public:
  // `carried` (with `kinds`, entity -> kind): envy rows to start with
  // besides the neighbour chain, where both kinds name an uncapped entity
  // here, and a basis to start from (uncapped problems only).
  CoopSolver(const ShareProblem& p, const Carried* carried = nullptr, std::vector<Kind> kinds = {})
      : p_(p),
        n_(p.num_entities()),
        k_(p.num_types()),
        total_weight_(p.total_weight()),
        carried_(carried),
        kinds_(std::move(kinds)) {
    cap_.resize(n_);
    for (std::size_t l = 0; l < n_; ++l) cap_[l] = p.entity_demand(l);
    any_cap_ = std::any_of(cap_.begin(), cap_.end(), [](double c) { return std::isfinite(c); });
    if (any_cap_) anchor_ = capped_equal_split();  // only capped rows use it
  }

  Matrix solve() {
    Matrix w = p_.speedup_matrix();
    s_ = build_share_lp(p_, &w);  // x, capacity and demand rows
    if (any_cap_) add_sharing_incentive_rows();
    add_neighbour_rows();
    add_seed_rows();
    if (carried_ != nullptr && carried_->basis != nullptr && !any_cap_)
      s_.lp.warm_start(carried_basis());
    Matrix x = generate();
    for (int round = 0; any_cap_ && round < kRelinearisationRounds; ++round) {
      double before = s_.lp.objective_value();
      if (!relinearise(x)) break;
      x = generate();
      if (s_.lp.objective_value() <= before * (1 + kTol)) break;
    }
    return x;
  }

  // The last solve's basis by meaning (uncapped problems: their LP has only
  // the x columns, the capacity rows and envy rows).
  KeyedBasis keyed_basis() const {
    KeyedBasis out;
    if (any_cap_) return out;
    const LpBasis b = s_.lp.basis();
    for (std::size_t l = 0; l < n_; ++l) {
      auto& statuses = out.columns[kinds_[l]];
      for (std::size_t j = 0; j < k_; ++j)
        statuses.push_back(b.variables[static_cast<std::size_t>(var(l, j))]);
    }
    out.capacity.assign(b.constraints.begin(),
                        b.constraints.begin() + static_cast<std::ptrdiff_t>(k_));
    for (const auto& [pair_key, row] : rows_)
      out.envy[kind_pair(kinds_[pair_key / n_], kinds_[pair_key % n_])] =
          b.constraints[static_cast<std::size_t>(row.index)];
    return out;
  }

  // The envy rows of uncapped entities that bind at the optimum (nonzero
  // dual), for seeding the next solve.
  std::vector<KindPair> binding_rows() const {
    std::vector<KindPair> out;
    for (const auto& [pair_key, row] : rows_) {
      const std::size_t l = pair_key / n_, i = pair_key % n_;
      if (std::isfinite(cap_[l]) || std::isfinite(cap_[i]) || s_.lp.dual(row.index) == 0) continue;
      out.push_back(kind_pair(kinds_[l], kinds_[i]));
    }
    std::sort(out.begin(), out.end());  // rows_ is unordered: keep solves deterministic
    return out;
  }

 private:
  struct Row {
    int index;
    double v;  // linearisation point of a capped row; 0 for a plain envy row
  };

  // x0: every entity takes the best cap_l devices of its own equal share.
  Matrix capped_equal_split() const {
    Matrix x(n_, k_);
    for (std::size_t l = 0; l < n_; ++l)
      p_.capped_bundle(l, p_.equal_share(l, total_weight_).data(), cap_[l], x.row(l));
    return x;
  }

  // The v minimising sum_j max(0, w_j - v) y_j + v d (the active piece of V_l at y).
  double linearisation_point(std::size_t l, const double* y) const {
    const auto& w = p_.entities[l].speedup;
    double best = std::numeric_limits<double>::infinity(), best_v = 0;
    std::vector<double> candidates{0.0};
    candidates.insert(candidates.end(), w.begin(), w.end());
    for (double v : candidates) {
      double f = v * cap_[l];
      for (std::size_t j = 0; j < k_; ++j) f += std::max(0.0, w[j] - v) * y[j];
      if (f < best) best = f, best_v = v;
    }
    return best_v;
  }

  // Coefficient of x_i^j in the envy row of l towards i: -(pi_l/pi_i) u_j.
  double target_coef(std::size_t l, std::size_t i, std::size_t j, double v) const {
    double s = p_.entities[l].weight / p_.entities[i].weight;
    return -s * std::max(0.0, p_.entities[l].speedup[j] - v);
  }

  int var(std::size_t l, std::size_t j) const { return s_.var(l, j); }

  // Envy row of l towards i: W_l.x_l - (pi_l/pi_i) u.x_i >= v d with
  // u_j = max(0, W_l^j - v); v = 0 (and d irrelevant) for an uncapped l.
  void add_envy_row(std::size_t l, std::size_t i, double v) {
    const auto& w = p_.entities[l].speedup;
    std::vector<int> vars;
    std::vector<double> coef;
    for (std::size_t j = 0; j < k_; ++j) {
      if (w[j] != 0) vars.push_back(var(l, j)), coef.push_back(w[j]);
      double c = target_coef(l, i, j, v);
      if (c != 0) vars.push_back(var(i, j)), coef.push_back(c);
    }
    double rhs = std::isfinite(cap_[l]) ? v * cap_[l] : 0.0;
    rows_[key(l, i)] = {s_.lp.add_constraint(vars, coef, rhs, kInf), v};
  }

  void add_pair(std::size_t l, std::size_t i) {
    if (rows_.count(key(l, i))) return;
    double v = 0;
    if (std::isfinite(cap_[l])) {
      // At the anchor, a point that satisfies every row and every capped envy
      // constraint, so the LP stays feasible.
      v = linearisation_point(l, p_.envied_bundle(l, i, anchor_).data());
    }
    add_envy_row(l, i, v);
  }

  // Only with demands: W_l.x_l >= V_l(m pi_l / sum pi).
  void add_sharing_incentive_rows() {
    for (std::size_t l = 0; l < n_; ++l) {
      double target = p_.capped_value(l, p_.equal_share(l, total_weight_).data(), cap_[l]);
      add_entity_row(s_, l, p_.entities[l].speedup.data(), target * (1 - kTol), kInf);
    }
  }

  // Initial envy rows: neighbours in speedup order (Theorem 5.2's adjacency
  // for two types); the lazy rounds find the rest.
  void add_neighbour_rows() {
    std::vector<std::size_t> order(n_);
    std::iota(order.begin(), order.end(), 0);
    std::vector<double> size(n_);
    for (std::size_t l = 0; l < n_; ++l) size[l] = p_.value(l, p_.capacity.data());
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return size[a] < size[b]; });
    for (std::size_t r = 0; r + 1 < n_; ++r) {
      add_pair(order[r], order[r + 1]);
      add_pair(order[r + 1], order[r]);
    }
  }

  void add_seed_rows() {
    if (carried_ == nullptr || carried_->seeds.empty()) return;
    std::unordered_map<Kind, std::size_t> uncapped;
    for (std::size_t l = 0; l < n_; ++l)
      if (!std::isfinite(cap_[l])) uncapped.emplace(kinds_[l], l);
    for (KindPair seed : carried_->seeds) {
      auto a = uncapped.find(static_cast<Kind>(seed >> 32));
      auto b = uncapped.find(static_cast<Kind>(seed & 0xffffffffu));
      if (a != uncapped.end() && b != uncapped.end() && a->second != b->second)
        add_pair(a->second, b->second);
    }
  }

  // The carried basis mapped onto this LP: what a column or row had in the
  // earlier solve; new columns start at zero, new rows with their slack basic.
  LpBasis carried_basis() const {
    const KeyedBasis& warm = *carried_->basis;
    LpBasis b;
    b.variables.assign(static_cast<std::size_t>(s_.lp.num_variables()), BasisStatus::kAtLower);
    b.constraints.assign(static_cast<std::size_t>(s_.lp.num_constraints()), BasisStatus::kBasic);
    for (std::size_t l = 0; l < n_; ++l) {
      auto it = warm.columns.find(kinds_[l]);
      if (it == warm.columns.end()) continue;
      for (std::size_t j = 0; j < k_; ++j)
        b.variables[static_cast<std::size_t>(var(l, j))] = it->second[j];
    }
    for (std::size_t j = 0; j < k_ && j < warm.capacity.size(); ++j)
      b.constraints[j] = warm.capacity[j];
    for (const auto& [pair_key, row] : rows_) {
      auto it = warm.envy.find(kind_pair(kinds_[pair_key / n_], kinds_[pair_key % n_]));
      if (it != warm.envy.end()) b.constraints[static_cast<std::size_t>(row.index)] = it->second;
    }
    return b;
  }

  // Lazy envy rows: solve, add the most violated rows, re-solve from the
  // previous basis; when no row is violated the optimum of the restricted LP
  // satisfies all n^2 rows and so is optimal for the full LP.
  Matrix generate() {
    LpSolveOptions options;
    options.exact_dual_steepest_edge = true;
    double last = std::numeric_limits<double>::infinity();
    for (;;) {
      solve_or_throw(s_.lp, "oef-coop", options);
      Matrix x = extract_allocation(p_, s_);
      double total = s_.lp.objective_value();
      if (!std::isfinite(last) || total < last - kTol * std::max(1.0, std::abs(last))) purge();
      last = total;
      if (!add_violated_rows(x)) return x;
    }
  }

  // Deletes the envy rows of uncapped entities whose dual is zero at the last
  // solve (capped rows are left to relinearise()); the solution stays optimal
  // for the smaller LP.
  void purge() {
    std::vector<int> gone;
    for (auto it = rows_.begin(); it != rows_.end();) {
      if (std::isfinite(cap_[it->first / n_]) || s_.lp.dual(it->second.index) != 0) {
        ++it;
        continue;
      }
      gone.push_back(it->second.index);
      it = rows_.erase(it);
    }
    if (gone.empty()) return;
    // Rows keep their order and are renumbered; only envy rows are looked up
    // again (for duals and relinearisation), so only they are remapped.
    std::vector<int> renumber(static_cast<std::size_t>(s_.lp.num_constraints()), 0);
    for (int r : gone) renumber[static_cast<std::size_t>(r)] = -1;
    int next = 0;
    for (int& r : renumber) r = r < 0 ? -1 : next++;
    s_.lp.delete_constraints(gone);
    for (auto& [pair_key, row] : rows_) row.index = renumber[static_cast<std::size_t>(row.index)];
  }

  bool add_violated_rows(const Matrix& x) {
    std::vector<double> own(n_);
    for (std::size_t l = 0; l < n_; ++l) own[l] = p_.throughput(l, x);
    std::vector<std::pair<double, std::size_t>> worst;
    bool added = false;
    for (std::size_t l = 0; l < n_; ++l) {
      worst.clear();
      const double* w = p_.entities[l].speedup.data();
      for (std::size_t i = 0; i < n_; ++i) {
        if (i == l) continue;
        double envy;
        if (std::isfinite(cap_[l])) {
          envy = p_.envy_value(l, i, x);
        } else {  // the n^2 hot loop: no allocation

          const double* xi = x.row(i);
          envy = 0;
          for (std::size_t j = 0; j < k_; ++j) envy += w[j] * xi[j];
          envy *= p_.entities[l].weight / p_.entities[i].weight;
        }
        double violation = envy - own[l];
        if (violation > 1e-9 * std::max(1.0, own[l]) && !rows_.count(key(l, i)))
          worst.emplace_back(violation, i);
      }
      std::size_t take = std::min(kRowsPerEntityPerRound, worst.size());
      std::partial_sort(worst.begin(), worst.begin() + static_cast<std::ptrdiff_t>(take),
                        worst.end(), std::greater<>());
      for (std::size_t r = 0; r < take; ++r) {
        add_pair(l, worst[r].second);
        add_pair(worst[r].second, l);  // see the opening comment: reverse rows
        added = true;
      }
    }
    return added;
  }

  // Moves every capped row to the piece of V_l active at x; true if any moved.
  bool relinearise(const Matrix& x) {
    std::vector<std::pair<std::size_t, std::size_t>> moved;
    for (auto& [pair_key, row] : rows_) {
      std::size_t l = pair_key / n_, i = pair_key % n_;
      if (!std::isfinite(cap_[l])) continue;
      double v = linearisation_point(l, p_.envied_bundle(l, i, x).data());
      if (v == row.v) continue;
      s_.lp.set_constraint_bounds(row.index, -kInf, kInf);  // retire the old piece
      moved.emplace_back(l, i);
      row.v = v;
    }
    for (auto [l, i] : moved) add_envy_row(l, i, rows_[key(l, i)].v);
    anchor_ = x;  // x satisfies all capped envy constraints and every new piece
    return !moved.empty();
  }

  std::size_t key(std::size_t l, std::size_t i) const { return l * n_ + i; }

  const ShareProblem& p_;
  std::size_t n_, k_;
  double total_weight_;
  std::vector<double> cap_;
  bool any_cap_ = false;
  Matrix anchor_;  // satisfies every row and every capped envy constraint
  ShareLp s_;
  std::unordered_map<std::size_t, Row> rows_;  // envy rows by key(l, i)
  const Carried* carried_;
  std::vector<Kind> kinds_;  // entity -> kind, with carried_
};

class OefCooperative final : public SharePolicy {
 public:
  std::string_view name() const override { return "oef-coop"; }

  // Round policies solve one problem after another that differ in a few
  // tenants and demands (and demand-aware shares solve a shrinking one two to
  // four times a round, by progressive filling). Two things carry over
  // (measured on bench/simulate_scale.sh's workload at 8,000 jobs: 20
  // tenant-level kinds on 3 types):
  //  - the envy rows that bound any of the last kRememberedSolves optima
  //    seed the lazy rounds: LP solves per allocation fell from 6.7 to 1.2
  //    (remembering only the last solve's rows: 4.0);
  //  - the first solve starts from the basis of the same progressive-filling
  //    step of the last sequence: simplex iterations per solve fell from 85
  //    (presolve and crash) to 5 (from the last solve's basis whatever its
  //    step: 34).
  // The optimum is the same LP's; only which of several optimal vertices CLP
  // returns may differ, so one-shot callers (allocate, audit, the SP probe)
  // leave this off.
  void remember_between_solves() override { remember_ = true; }
  void begin_solve_sequence() override { step_ = 0; }

  Matrix allocate(const ShareProblem& p) const override {
    Grouping g = group_identical(p);
    Matrix xr;
    if (remember_) {
      std::vector<Kind> kinds(g.reduced.num_entities());
      for (std::size_t l = 0; l < kinds.size(); ++l)
        kinds[l] =
            kinds_.try_emplace(g.reduced.entities[l].speedup, static_cast<Kind>(kinds_.size()))
                .first->second;
      // The basis of the same step of the last sequence, else of the step before.
      carried_.basis = nullptr;
      for (std::size_t step : {step_, step_ - 1})  // step_ - 1 wraps at 0: none
        if (step < bases_.size() && !bases_[step].columns.empty()) {
          carried_.basis = &bases_[step];
          break;
        }
      CoopSolver solver(g.reduced, &carried_, std::move(kinds));
      xr = solver.solve();
      remember(solver.binding_rows());
      if (bases_.size() <= step_) bases_.resize(step_ + 1);
      bases_[step_++] = solver.keyed_basis();
    } else {
      xr = CoopSolver(g.reduced).solve();
    }
    Matrix x(p.num_entities(), p.num_types());
    for (std::size_t r = 0; r < g.members.size(); ++r) {
      double total = g.reduced.entities[r].weight;
      for (std::size_t e : g.members[r])
        for (std::size_t j = 0; j < p.num_types(); ++j)
          x(e, j) = xr(r, j) * p.entities[e].weight / total;
    }
    return x;
  }

 private:
  static constexpr long kRememberedSolves = 16;

  // Keeps the rows that bound one of the last kRememberedSolves solves.
  void remember(const std::vector<KindPair>& rows) const {
    ++solves_;
    for (KindPair row : rows) last_bound_[row] = solves_;
    std::erase_if(last_bound_,
                  [&](const auto& entry) { return solves_ - entry.second >= kRememberedSolves; });
    carried_.seeds.clear();
    for (const auto& entry : last_bound_) carried_.seeds.push_back(entry.first);
  }

  bool remember_ = false;
  // Written by allocate(), which stays const for the callers that do not
  // remember; a remembering policy belongs to one round policy.
  mutable std::map<std::vector<double>, Kind> kinds_;  // speedup vector -> kind
  mutable std::map<KindPair, long> last_bound_;        // row -> last solve it bound
  mutable Carried carried_;                            // seeds: last_bound_'s keys
  mutable long solves_ = 0;
  // Per step of a solve sequence, the last basis found there (uncapped solves).
  mutable std::vector<KeyedBasis> bases_;
  mutable std::size_t step_ = 0;
};

}  // namespace

std::unique_ptr<SharePolicy> NewOefCooperative() { return std::make_unique<OefCooperative>(); }

}  // namespace fairgpu::policy
