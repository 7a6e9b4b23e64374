// `ossp` — Gavel's minimum-makespan policy (Narayanan et al., OSDI 2020,
// §4.2 "Minimize makespan", policies/min_total_duration.py), the "OSSP"
// baseline of Shockwave (§8.2), at job level:
//
//   min_X max_j R_j / T_j(X),  T_j(X) = Σ_t rate_best[j][t] x_jt,
//   Σ_t x_jt <= 1,  Σ_j workers_j x_jt <= m_t,  x >= 0
//
// with R_j the job's work left. With τ = 1 / makespan this is one LP:
// maximise τ s.t. T_j(X) >= τ R_j. Gavel finds the same optimum by a search
// on the makespan. Any optimum may leave capacity the bottleneck jobs cannot
// use; a second LP (our choice, as in ftf.cc) keeps every T_j >= τ* R_j and
// maximises total normalised throughput, so spare capacity still does work.
// Realised by Gavel's priority rounds (placement/gavel_rounds.h), re-solved
// every round (remaining work changes), 360 s rounds by default; when every
// job fits on its one fastest type at once that is the optimum, whatever the
// work left (fastest_fit.h), and taken without an LP.
#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "fairgpu/lp.h"
#include "placement/gavel_rounds.h"
#include "policy/fastest_fit.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy {
namespace {

class Ossp final : public RoundPolicy {
 public:
  explicit Ossp(const PolicyOptions& o) : name_(o.full_name()), interval_(o.number("round")) {}
  std::string_view name() const override { return name_; }
  double interval() const override { return interval_; }

  // Stable after a plan that took the known optimum (every job on its one
  // fastest type) and renewed every running job in place with none waiting:
  // the next point, absent an event, has the same jobs on the same types
  // (only the work left differs, which the optimum does not read), hence
  // the same x, whose one pair per job all fit: the same renewals.
  Stability stability(const SchedulerState&) const override {
    if (!steady_) return {};
    return {std::numeric_limits<double>::infinity(), interval_, kUnset};
  }

  RoundPlan plan(const SchedulerState& s) override {
    const std::size_t k = s.model->cluster.num_types();
    const std::size_t n = s.active.size();
    Matrix x(n, k);
    // The LP's variables: a type the job runs on whose capacity holds its gang.
    const std::vector<std::size_t> fastest = fastest_types_if_all_fit(
        n, std::vector<double>(s.model->capacity.begin(), s.model->capacity.end()),
        [&](std::size_t r) { return s.jobs[s.active[r]].workers; },
        [&](std::size_t r, std::size_t t) {
          const Job& j = s.jobs[s.active[r]];
          const bool live = j.work - done_now(s, j) > 1e-12;
          return live && j.runs_on(t) && j.workers <= s.model->capacity[t] ? j.rate_best[t] : 0.0;
        });
    if (!fastest.empty()) {
      for (std::size_t r = 0; r < n; ++r) x(r, fastest[r]) = s.jobs[s.active[r]].workers;
      RoundPlan plan;
      plan.run = placement::gavel_priority_round(s, s.active, x, s.now + interval_);
      steady_ = s.active.size() == s.running.size() &&
                renews_every_running_in_place(s, plan, interval_);
      plan.recomputed = !steady_;  // steady: the decision in force again
      return plan;
    }
    steady_ = false;
    LinearProgram lp;
    lp.maximize();
    const int tau = lp.add_variable(0.0, kInf, 1.0);
    std::vector<int> var(n * k, -1);
    std::vector<int> rows(n, -1);
    std::vector<std::vector<int>> cap_vars(k);
    std::vector<std::vector<double>> cap_coefs(k);
    for (std::size_t r = 0; r < n; ++r) {
      const Job& j = s.jobs[s.active[r]];
      const double left = j.work - done_now(s, j);
      if (!(left > 1e-12)) continue;
      std::vector<int> vars;
      std::vector<double> rates, unit;
      for (std::size_t t = 0; t < k; ++t) {
        if (!j.runs_on(t) || j.workers > s.model->capacity[t]) continue;
        var[r * k + t] = lp.add_variable(0.0, 1.0);
        vars.push_back(var[r * k + t]);
        rates.push_back(j.rate_best[t]);
        unit.push_back(1.0);
        cap_vars[t].push_back(var[r * k + t]);
        cap_coefs[t].push_back(j.workers);
      }
      if (vars.empty()) continue;
      lp.add_constraint(vars, unit, -kInf, 1.0);
      vars.push_back(tau);
      rates.push_back(-left);
      rows[r] = lp.add_constraint(vars, rates, 0.0, kInf);
    }
    for (std::size_t t = 0; t < k; ++t)
      if (!cap_vars[t].empty())
        lp.add_constraint(cap_vars[t], cap_coefs[t], -kInf, s.model->capacity[t]);
    if (lp.solve() == LpStatus::kOptimal) {
      // Keep τ at its optimum (a hair of slack for round-off) and use spare
      // capacity for normalised throughput.
      const double best = lp.value(tau);
      lp.set_variable_bounds(tau, best * (1 - 1e-9), best * (1 - 1e-9));
      lp.set_objective(tau, 0.0);
      for (std::size_t r = 0; r < n; ++r) {
        const Job& j = s.jobs[s.active[r]];
        for (std::size_t t = 0; t < k; ++t)
          if (var[r * k + t] >= 0)
            lp.set_objective(var[r * k + t], j.workers * j.rate_best[t] / j.ref_rate);
      }
      const bool efficient = lp.solve() == LpStatus::kOptimal;
      if (!efficient) {  // keep the min-makespan solution
        lp.set_variable_bounds(tau, 0.0, kInf);
        lp.set_objective(tau, 1.0);
        for (int v : var)
          if (v >= 0) lp.set_objective(v, 0.0);
        lp.solve();
      }
      for (std::size_t r = 0; r < n; ++r)
        for (std::size_t t = 0; t < k; ++t)
          if (var[r * k + t] >= 0)
            x(r, t) = std::max(0.0, lp.value(var[r * k + t])) * s.jobs[s.active[r]].workers;
    }
    RoundPlan plan;
    plan.recomputed = true;
    plan.run = placement::gavel_priority_round(s, s.active, x, s.now + interval_);
    return plan;
  }

 private:
  std::string name_;
  double interval_;
  bool steady_ = false;  // the last plan starts the stretch stability() describes
};

}  // namespace

std::vector<OptionSpec> OsspKeys() {
  return {choice_option("level", "job", "job only: the policy decides job by job", {"job"}),
          number_option("round", 360.0, "round length in seconds (Gavel's 360)", 0.0,
                        std::numeric_limits<double>::infinity(), true)};
}

std::unique_ptr<RoundPolicy> NewOsspPolicy(const PolicyOptions& options) {
  return std::make_unique<Ossp>(options);
}

}  // namespace fairgpu::policy
