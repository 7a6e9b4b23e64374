// `ftf` — Gavel's finish-time fairness (Narayanan et al., OSDI 2020, §4.2,
// "Minimize finish time fairness", the Themis objective made
// heterogeneity-aware), at job level, realised by Gavel's priority rounds (§5):
//
//   min_X max_i rho_i(X),  rho_i(X) = (t_i + R_i / T_i(X)) / (t_i^iso + R_i / T_i^iso)
//
// with T_i(X) = sum_t rate_best[i][t] * x_it (x_it: fraction of time job i
// runs on type t; sum_t x_it <= 1; sum_i workers_i * x_it <= m_t), R_i its
// iterations left and t_i the seconds since it arrived. Where the paper is
// terse we follow Gavel's implementation (policies/finish_time_fairness.py):
//   - T_i^iso, the isolated throughput: the job's throughput on 1/n of every
//     type (n = active jobs), as time fractions of its gang m_t / (n *
//     workers_i); when those add up to more than 1 over the types it runs on,
//     they are scaled down to 1 (its gang cannot use more time than there
//     is). Types it cannot run on give it nothing and are left out of the
//     scaling. Unweighted: Gavel's ρ ignores priority weights. (One version
//     of Gavel's IsolatedPolicy rescales every row to 1, so n drops out; we
//     keep the 1/n share the paper describes.)
//   - t_i^iso, the cumulative isolated time: at every solve the iterations
//     the job did since the previous solve, divided by the isolated
//     throughput it had at the previous solve, are added to it; i.e. the
//     time its progress so far would have taken on its isolated share. It
//     starts at 0 on arrival.
// ρ_i is not linear in X, but ρ_i <= z is: T_i(X) >= R_i / (z (t_i^iso +
// R_i / T_i^iso) - t_i), impossible when the denominator is <= 0. So z* is
// found to a relative 1e-6 by a search on z, each step a feasibility LP over
// CLP (shortfall variables s_i >= 0 on the throughput rows, minimise sum s_i:
// always solvable, warm-started from the previous step, only row bounds
// change). The least shortfall is convex in z, so a Newton step from an
// infeasible z (slope from the LP's duals) is a lower bound on z*: Newton
// steps, each followed by a probe just above the new bound, with bisection
// as the safeguard (a third of the LPs plain bisection needs on the tests'
// instances). The bracket: below, every job alone on the cluster (its best
// greedy fill of the types); above, everyone on the isolated share (itself
// a feasible allocation). Gavel's cvxpy program only minimises the max; any
// optimum may leave capacity idle, so a second LP (our choice) keeps every
// rho_i <= z* and maximises total normalised throughput
// sum_i workers_i * T_i(X) / ref_rate_i — capacity the bottleneck jobs
// cannot use still goes to work, as in our Gavel max-min (gavel.cc).
// Jobs with no work left (finishing at this instant) get nothing and do not
// count in the max.
//
// The round policy: Gavel's 360 s rounds (--round overrides; --lease does not
// apply: every lease ends with the round). ρ depends on time, so the
// allocation is re-solved every round; the priority rounds
// (placement/gavel_rounds.h) turn the time fractions into whole gangs.
#include "policy/ftf.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "fairgpu/lp.h"
#include "fairgpu/scheduler.h"
#include "placement/gavel_rounds.h"
#include "policy/fastest_fit.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy {

namespace {

constexpr double kRelTolerance = 1e-6;  // the search stops at hi - lo <= kRelTolerance * hi
// Total shortfall (in units of each job's best single-type throughput) under
// which a z counts as feasible: well under the search's resolution.
constexpr double kShortfallTolerance = 1e-9;

// Most throughput a job can get with the cluster to itself: fill its time
// with the fastest types first, each up to the gang-time its capacity allows.
double solo_throughput(const FtfJob& j, const std::vector<double>& capacity) {
  std::vector<std::size_t> order(j.rate.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return j.rate[a] > j.rate[b]; });
  double left = 1.0, total = 0.0;
  for (std::size_t t : order) {
    if (!(j.rate[t] > 0.0) || left <= 0.0) break;
    const double f = std::min(left, capacity[t] / j.workers);
    total += j.rate[t] * f;
    left -= f;
  }
  return total;
}

Matrix isolated_fractions(const FtfInput& in) {
  const std::size_t n = in.jobs.size(), k = in.capacity.size();
  Matrix f(n, k);
  for (std::size_t i = 0; i < n; ++i) {
    const FtfJob& j = in.jobs[i];
    double sum = 0.0;
    for (std::size_t t = 0; t < k; ++t) {
      if (!(j.rate[t] > 0.0)) continue;
      f(i, t) = in.capacity[t] / (static_cast<double>(n) * j.workers);
      sum += f(i, t);
    }
    if (sum > 1.0)
      for (std::size_t t = 0; t < k; ++t) f(i, t) /= sum;
  }
  return f;
}

}  // namespace

std::vector<double> ftf_isolated_throughput(const FtfInput& in) {
  const Matrix f = isolated_fractions(in);
  std::vector<double> out(in.jobs.size(), 0.0);
  for (std::size_t i = 0; i < in.jobs.size(); ++i)
    for (std::size_t t = 0; t < in.capacity.size(); ++t) out[i] += in.jobs[i].rate[t] * f(i, t);
  return out;
}

FtfSolution solve_ftf(const FtfInput& in) {
  const std::size_t n = in.jobs.size(), k = in.capacity.size();
  FtfSolution sol;
  sol.fraction = Matrix(n, k);
  sol.isolated_throughput = ftf_isolated_throughput(in);
  const Matrix iso = isolated_fractions(in);

  // The jobs that count: work left and some type they can run on.
  struct Live {
    std::size_t job;
    double solo, best_rate, denom;  // denom: t_iso + R / T_iso
  };
  std::vector<Live> live;
  for (std::size_t i = 0; i < n; ++i) {
    const FtfJob& j = in.jobs[i];
    const double solo = solo_throughput(j, in.capacity);
    if (!(j.remaining > 0.0) || !(solo > 0.0)) continue;
    const double best = *std::max_element(j.rate.begin(), j.rate.end());
    live.push_back({i, solo, best, j.isolated_elapsed + j.remaining / sol.isolated_throughput[i]});
  }
  if (live.empty()) return sol;

  const std::vector<std::size_t> fastest = fastest_types_if_all_fit(
      live.size(), in.capacity, [&](std::size_t l) { return in.jobs[live[l].job].workers; },
      [&](std::size_t l, std::size_t t) {
        const FtfJob& j = in.jobs[live[l].job];
        return j.rate[t] > 0.0 && in.capacity[t] > 0.0 ? j.rate[t] : 0.0;  // the LP's variables
      });
  if (!fastest.empty()) {
    sol.fastest = true;
    for (std::size_t l = 0; l < live.size(); ++l) {
      const FtfJob& j = in.jobs[live[l].job];
      sol.fraction(live[l].job, fastest[l]) = 1.0;
      sol.rho = std::max(sol.rho, (j.elapsed + j.remaining / j.rate[fastest[l]]) / live[l].denom);
    }
    return sol;
  }

  double lo = 0.0, hi = 0.0;
  for (const Live& l : live) {
    const FtfJob& j = in.jobs[l.job];
    lo = std::max(lo, (j.elapsed + j.remaining / l.solo) / l.denom);
    hi = std::max(hi, (j.elapsed + j.remaining / sol.isolated_throughput[l.job]) / l.denom);
  }
  lo = std::min(lo, hi);

  // The LP: x_it only where the job runs, one shortfall s_i per live job.
  LinearProgram lp;
  lp.minimize();
  std::vector<int> var(n * k, -1), shortfall(live.size()), throughput_row(live.size());
  for (std::size_t l = 0; l < live.size(); ++l) {
    const FtfJob& j = in.jobs[live[l].job];
    for (std::size_t t = 0; t < k; ++t)
      if (j.rate[t] > 0.0 && in.capacity[t] > 0.0)
        var[live[l].job * k + t] = lp.add_variable(0.0, kInf);
    shortfall[l] = lp.add_variable(0.0, kInf, 1.0);
  }
  std::vector<int> vars;
  std::vector<double> coefs;
  for (std::size_t t = 0; t < k; ++t) {
    vars.clear();
    coefs.clear();
    for (const Live& l : live)
      if (var[l.job * k + t] >= 0) {
        vars.push_back(var[l.job * k + t]);
        coefs.push_back(in.jobs[l.job].workers);
      }
    if (!vars.empty()) lp.add_constraint(vars, coefs, -kInf, in.capacity[t]);
  }
  for (std::size_t l = 0; l < live.size(); ++l) {
    const FtfJob& j = in.jobs[live[l].job];
    vars.clear();
    coefs.clear();
    for (std::size_t t = 0; t < k; ++t)
      if (var[live[l].job * k + t] >= 0) vars.push_back(var[live[l].job * k + t]);
    coefs.assign(vars.size(), 1.0);
    lp.add_constraint(vars, coefs, -kInf, 1.0);
    // Throughput in units of the job's fastest rate, so every row is O(1).
    coefs.clear();
    for (std::size_t t = 0; t < k; ++t)
      if (var[live[l].job * k + t] >= 0) coefs.push_back(j.rate[t] / live[l].best_rate);
    vars.push_back(shortfall[l]);
    coefs.push_back(1.0);
    throughput_row[l] = lp.add_constraint(vars, coefs, 0.0, kInf);
  }

  // Required throughput of every live job for max rho <= z, in rows' units;
  // false when some job cannot reach it even alone.
  std::vector<double> need(live.size());
  auto needs = [&](double z) {
    for (std::size_t l = 0; l < live.size(); ++l) {
      const FtfJob& j = in.jobs[live[l].job];
      const double gap = z * live[l].denom - j.elapsed;
      if (!(gap > 0.0)) return false;
      const double required = j.remaining / gap;
      if (required > live[l].solo * (1 + 1e-12)) return false;
      need[l] = required / live[l].best_rate;
    }
    return true;
  };
  auto solve = [&](const char* what) {
    const LpStatus st = lp.solve();
    ++sol.lp_solves;
    if (st != LpStatus::kOptimal)
      throw std::runtime_error(std::string("ftf ") + what + ": LP " + to_string(st));
  };
  // The last allocation found feasible; the isolated share to begin with.
  Matrix best(n, k);
  for (const Live& l : live)
    for (std::size_t t = 0; t < k; ++t) best(l.job, t) = iso(l.job, t);
  // Whether every rho_i <= z can hold. If not, phi(z) = the least total
  // shortfall > 0; phi is convex in z (the LP's value is convex and
  // nondecreasing in the required throughputs, each convex in z), so its
  // tangent, with the slope from the throughput rows' duals, meets 0 at or
  // below z*: `newton` is that lower bound (0 when there is none).
  double newton = 0.0;
  auto feasible = [&](double z) {
    newton = 0.0;
    if (!needs(z)) return false;
    for (std::size_t l = 0; l < live.size(); ++l)
      lp.set_constraint_bounds(throughput_row[l], need[l], kInf);
    solve("feasibility");
    const double phi = lp.objective_value();
    if (phi > kShortfallTolerance) {
      double slope = 0.0;  // d phi / dz = sum_i dual_i * d need_i / dz
      for (std::size_t l = 0; l < live.size(); ++l) {
        const FtfJob& j = in.jobs[live[l].job];
        const double gap = z * live[l].denom - j.elapsed;
        slope -= std::abs(lp.dual(throughput_row[l])) * j.remaining * live[l].denom /
                 (gap * gap * live[l].best_rate);
      }
      if (slope < 0.0) newton = z - phi / slope;
      return false;
    }
    for (const Live& l : live)
      for (std::size_t t = 0; t < k; ++t)
        best(l.job, t) = var[l.job * k + t] >= 0 ? std::max(0.0, lp.value(var[l.job * k + t])) : 0.0;
    return true;
  };

  // Newton steps from below, each followed by a probe just above the new
  // lower bound (feasible: done); bisection when Newton has no bound or has
  // taken 6 steps in a row (a safeguard against slow convergence). hi is
  // always a z found feasible, or the isolated share's max rho.
  double z = lo;
  int newton_streak = 0;
  for (;;) {
    bool use_newton = false;
    if (feasible(z)) {
      hi = z;
    } else {
      lo = std::max(lo, z);
      if (newton > lo && newton_streak < 6) {
        lo = std::min(newton, hi);
        use_newton = true;
      }
    }
    if (hi - lo <= kRelTolerance * hi) break;
    newton_streak = use_newton ? newton_streak + 1 : 0;
    z = use_newton ? lo + 0.5 * kRelTolerance * hi : 0.5 * (lo + hi);
  }
  sol.rho = hi;

  // Among allocations with every rho_i <= z*, the most normalised throughput.
  bool efficient = needs(hi);
  if (efficient) {
    lp.maximize();
    for (std::size_t l = 0; l < live.size(); ++l) {
      const FtfJob& j = in.jobs[live[l].job];
      lp.set_variable_bounds(shortfall[l], 0.0, 0.0);
      lp.set_objective(shortfall[l], 0.0);
      lp.set_constraint_bounds(throughput_row[l], need[l], kInf);
      for (std::size_t t = 0; t < k; ++t)
        if (var[live[l].job * k + t] >= 0)
          lp.set_objective(var[live[l].job * k + t], j.workers * j.rate[t] / j.ref_rate);
    }
    efficient = lp.solve() == LpStatus::kOptimal;
    ++sol.lp_solves;
  }
  for (const Live& l : live)
    for (std::size_t t = 0; t < k; ++t) {
      const int v = var[l.job * k + t];
      // Numerically infeasible at the bound found: keep the last feasible step.
      sol.fraction(l.job, t) = efficient ? (v >= 0 ? std::max(0.0, lp.value(v)) : 0.0) : best(l.job, t);
    }
  return sol;
}

namespace {

// Gavel's default round: 6 minutes.
constexpr double kGavelRoundS = 360.0;

class Ftf final : public RoundPolicy {
 public:
  explicit Ftf(const PolicyOptions& o) : name_(o.full_name()), interval_(o.number("round")) {}

  std::string_view name() const override { return name_; }
  double interval() const override { return interval_; }

  // Stable after a plan whose allocation was every job on its one fastest
  // type (FtfSolution::fastest: it reads neither the work left nor the
  // times, which age) that renewed every running job in place with none
  // waiting: the next point, absent an event, has the same x, whose one pair
  // per job all fit, hence the same renewals and estimate. t_iso is kept in
  // closed form (Track), so the points skipped change none of its bits.
  Stability stability(const SchedulerState&) const override {
    if (!steady_) return {};
    return {std::numeric_limits<double>::infinity(), interval_, estimated_};
  }

  RoundPlan plan(const SchedulerState& s) override {
    RoundPlan plan;
    const std::size_t k = s.model->cluster.num_types();
    FtfInput in;
    in.capacity.assign(s.model->capacity.begin(), s.model->capacity.end());
    if (track_.size() < s.jobs.size()) track_.resize(s.jobs.size());
    std::vector<double> done(s.active.size());
    for (std::size_t r = 0; r < s.active.size(); ++r) {
      const Job& j = s.jobs[s.active[r]];
      Track& tr = track_[j.index];
      done[r] = done_now(s, j);
      FtfJob f;
      f.workers = j.workers;
      f.rate = j.rate_best;
      f.ref_rate = j.ref_rate;
      f.remaining = j.work - done[r];
      f.elapsed = s.now - j.arrival;
      f.isolated_elapsed = tr.isolated_time(done[r]);
      in.jobs.push_back(std::move(f));
    }
    const FtfSolution sol = solve_ftf(in);
    Matrix x(s.active.size(), k);
    double estimated = 0.0;
    for (std::size_t r = 0; r < s.active.size(); ++r) {
      const Job& j = s.jobs[s.active[r]];
      track_[j.index].set_throughput(sol.isolated_throughput[r], done[r]);
      for (std::size_t t = 0; t < k; ++t) {
        x(r, t) = sol.fraction(r, t) * j.workers;  // devices of type t, on average
        estimated += x(r, t) * j.rate_best[t] / j.ref_rate;
      }
    }
    plan.estimated_throughput = estimated;
    plan.run = placement::gavel_priority_round(s, s.active, x, s.now + interval_);
    bool live = true;
    for (const FtfJob& f : in.jobs) live &= f.remaining > 0.0;
    steady_ = sol.fastest && live && s.active.size() == s.running.size() &&
              renews_every_running_in_place(s, plan, interval_);
    estimated_ = estimated;
    plan.recomputed = !steady_;  // steady: the decision in force again
    return plan;
  }

 private:
  // Gavel's cumulative isolated time t^iso: at every solve, the progress
  // since the previous one at the isolated throughput of the previous one.
  // That throughput changes only when the active set does, so t^iso is
  // linear in progress between those solves and kept as iso_base + (done -
  // done_base) / throughput: its value does not depend on how many solves
  // came in between.
  struct Track {
    bool seen = false;
    double done_base = 0.0;           // iterations when the throughput was set
    double isolated_throughput = 0.0;  // in force since then
    double iso_base = 0.0;            // t^iso then
    double isolated_time(double done) const {
      if (!seen || !(isolated_throughput > 0.0)) return iso_base;
      return iso_base + (done - done_base) / isolated_throughput;
    }
    void set_throughput(double throughput, double done) {
      if (seen && throughput == isolated_throughput) return;
      iso_base = isolated_time(done);
      done_base = done;
      isolated_throughput = throughput;
      seen = true;
    }
  };
  std::string name_;
  double interval_;
  std::vector<Track> track_;  // by job index
  bool steady_ = false;       // the last plan starts the stretch stability() describes
  double estimated_ = kUnset;
};

}  // namespace

std::vector<OptionSpec> FtfKeys() {
  return {choice_option("level", "job", "job only: the policy decides job by job", {"job"}),
          number_option("round", kGavelRoundS, "round length in seconds (Gavel's 360)", 0.0,
                        std::numeric_limits<double>::infinity(), true)};
}

std::unique_ptr<RoundPolicy> NewFtfPolicy(const PolicyOptions& options) {
  return std::make_unique<Ftf>(options);
}

}  // namespace fairgpu::policy
