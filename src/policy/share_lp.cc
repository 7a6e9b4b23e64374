#include "policy/share_lp.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace fairgpu::policy {
namespace {
// Levels come out of an LP solved to CLP's primal tolerance (1e-7), so a level
// re-imposed as a bound keeps that much relative slack; 1e-9 left a
// demand-capped instance from the simulator infeasible
// (tests/data/gavel-capped-levels.json).
constexpr double kLevelSlack = 1e-7;
}  // namespace

void solve_or_throw(LinearProgram& lp, const char* what, const LpSolveOptions& o) {
  LpStatus st = lp.solve(o);
  if (st != LpStatus::kOptimal)
    throw std::runtime_error(std::string(what) + ": LP " + to_string(st));
}

ShareLp build_share_lp(const ShareProblem& p, const Matrix* objective) {
  ShareLp s;
  s.k = p.num_types();
  s.lp.maximize();
  s.x.resize(p.num_entities() * s.k);
  for (std::size_t e = 0; e < p.num_entities(); ++e)
    for (std::size_t j = 0; j < s.k; ++j)
      s.x[e * s.k + j] = s.lp.add_variable(0.0, kInf, objective ? (*objective)(e, j) : 0.0);
  std::vector<int> vars;
  std::vector<double> ones;
  for (std::size_t j = 0; j < s.k; ++j) {
    vars.clear();
    for (std::size_t e = 0; e < p.num_entities(); ++e) vars.push_back(s.var(e, j));
    ones.assign(vars.size(), 1.0);
    s.lp.add_constraint(vars, ones, -kInf, p.capacity[j]);
  }
  for (std::size_t e = 0; e < p.num_entities(); ++e) {
    double cap = p.entity_demand(e);
    if (!std::isfinite(cap)) continue;
    vars.clear();
    for (std::size_t j = 0; j < s.k; ++j) vars.push_back(s.var(e, j));
    ones.assign(vars.size(), 1.0);
    s.lp.add_constraint(vars, ones, -kInf, cap);
  }
  return s;
}

int add_entity_row(ShareLp& s, std::size_t e, const double* coef, double lower, double upper,
                   int rhs_var, double rhs_var_coef) {
  std::vector<int> vars;
  std::vector<double> c;
  for (std::size_t j = 0; j < s.k; ++j) {
    if (coef[j] == 0.0) continue;
    vars.push_back(s.var(e, j));
    c.push_back(coef[j]);
  }
  if (rhs_var >= 0) {
    vars.push_back(rhs_var);
    c.push_back(-rhs_var_coef);
  }
  return s.lp.add_constraint(vars, c, lower, upper);
}

Matrix extract_allocation(const ShareProblem& p, const ShareLp& s) {
  Matrix x(p.num_entities(), s.k);
  for (std::size_t e = 0; e < p.num_entities(); ++e)
    for (std::size_t j = 0; j < s.k; ++j) x(e, j) = std::max(0.0, s.lp.value(s.var(e, j)));
  return x;
}

bool single_level_suffices(const ShareProblem& p) {
  if (p.has_demands()) return false;
  for (const auto& e : p.entities)
    for (double w : e.speedup)
      if (!(w > 0)) return false;
  return true;
}

namespace {

constexpr double kNotFrozen = -1.0;

// Level rows: frozen entities at their level (== or >=), the others tied to
// variable t (== or >=). Returns t's index.
int add_level_rows(ShareLp& s, const ShareProblem& p, const Matrix& a,
                   const std::vector<double>& level, bool equal, double t_objective) {
  int t = s.lp.add_variable(0.0, kInf, t_objective);
  for (std::size_t e = 0; e < p.num_entities(); ++e) {
    if (level[e] != kNotFrozen) {
      add_entity_row(s, e, a.row(e), level[e] * (1 - kLevelSlack), equal ? level[e] * (1 + 1e-9) : kInf);
    } else {
      add_entity_row(s, e, a.row(e), 0.0, equal ? 0.0 : kInf, t, 1.0);
    }
  }
  return t;
}

// Which of the unfrozen entities can rise above level t* while every other
// unfrozen entity keeps at least t* and every frozen one its level.
std::vector<bool> can_rise(const ShareProblem& p, const Matrix& a, const std::vector<double>& level,
                           double t_star) {
  std::size_t n = p.num_entities();
  std::vector<bool> rises(n, false), undecided(n, false);
  for (std::size_t e = 0; e < n; ++e) undecided[e] = level[e] == kNotFrozen;
  double cap = std::max(t_star, 1e-6);
  double tol = 1e-7 * std::max(1.0, t_star);
  // Maximising the sum of bounded slacks finds raisable entities; one that an
  // optimal vertex leaves at zero may still rise, so re-ask for those alone
  // until an LP raises none of them.
  for (;;) {
    ShareLp s = build_share_lp(p);
    std::vector<std::pair<std::size_t, int>> slack;
    for (std::size_t e = 0; e < n; ++e) {
      if (level[e] != kNotFrozen) {
        add_entity_row(s, e, a.row(e), level[e] * (1 - kLevelSlack), kInf);
      } else if (undecided[e]) {
        int sv = s.lp.add_variable(0.0, cap, 1.0);
        slack.emplace_back(e, sv);
        add_entity_row(s, e, a.row(e), t_star * (1 - kLevelSlack), kInf, sv, 1.0);
      } else {
        add_entity_row(s, e, a.row(e), t_star * (1 - kLevelSlack), kInf);
      }
    }
    if (slack.empty()) break;
    // The test LP is feasible in exact arithmetic (t* itself is a solution);
    // if round-off says otherwise, nobody is shown to rise and the undecided
    // freeze at t*: a max-min allocation still, possibly less filled.
    if (s.lp.solve() != LpStatus::kOptimal) break;
    bool any = false;
    for (auto [e, sv] : slack) {
      if (s.lp.value(sv) > tol) {
        rises[e] = true;
        undecided[e] = false;
        any = true;
      }
    }
    if (!any) break;
  }
  return rises;
}

}  // namespace

Matrix progressive_filling(const ShareProblem& p, const Matrix& a, bool equal) {
  std::size_t n = p.num_entities();
  std::vector<double> level(n, kNotFrozen);
  bool one_level = single_level_suffices(p);
  for (std::size_t unfrozen = n; unfrozen > 0;) {
    ShareLp s = build_share_lp(p);
    int t = add_level_rows(s, p, a, level, equal, 1.0);
    solve_or_throw(s.lp, "progressive filling");
    double t_star = s.lp.value(t);
    std::vector<bool> rises =
        one_level ? std::vector<bool>(n, false) : can_rise(p, a, level, t_star);
    // At the max-min level somebody is always a bottleneck; if numerical noise
    // says otherwise, freeze everyone rather than loop.
    bool all_rise = true;
    for (std::size_t e = 0; e < n; ++e)
      if (level[e] == kNotFrozen && !rises[e]) all_rise = false;
    for (std::size_t e = 0; e < n; ++e) {
      if (level[e] == kNotFrozen && (!rises[e] || all_rise)) {
        level[e] = t_star;
        --unfrozen;
      }
    }
  }
  Matrix c = p.speedup_matrix();
  ShareLp s = build_share_lp(p, &c);
  // Levels come out of an LP: keep kLevelSlack so the final model stays feasible.
  for (std::size_t e = 0; e < n; ++e)
    add_entity_row(s, e, a.row(e), level[e] * (1 - kLevelSlack), equal ? level[e] * (1 + 1e-9) : kInf);
  solve_or_throw(s.lp, "progressive filling (final)");
  return extract_allocation(p, s);
}

}  // namespace fairgpu::policy
