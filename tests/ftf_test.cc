// Gavel's finish-time fairness (`ftf`, src/policy/ftf.cc): the search's
// optimum against hand-derived cases, a brute-force search (2 jobs x 2
// types) and an independently written LP (more jobs and types), then the
// round policy end to end in the simulator.
//
// rho_i(X) = (t_i + R_i / T_i(X)) / (t_iso_i + R_i / T_iso_i), T_i(X) =
// sum_t rate_it x_it; T_iso_i on 1/n of every type (time fractions
// m_t / (n w_i), scaled to sum <= 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "fairgpu/input_error.h"
#include "fairgpu/lp.h"
#include "fairgpu/scheduler.h"
#include "fairgpu/simulator.h"
#include "policy/ftf.h"
#include "toy_model.h"

namespace fairgpu {
namespace {

using policy::FtfInput;
using policy::FtfJob;
using policy::FtfSolution;
using policy::solve_ftf;

FtfJob ftf_job(int workers, std::vector<double> rate, double remaining, double elapsed,
               double isolated_elapsed) {
  FtfJob j;
  j.workers = workers;
  double ref = 0.0;
  for (double r : rate)
    if (r > 0.0 && (ref == 0.0 || r < ref)) ref = r;
  j.rate = std::move(rate);
  j.ref_rate = ref;
  j.remaining = remaining;
  j.elapsed = elapsed;
  j.isolated_elapsed = isolated_elapsed;
  return j;
}

// The test's own isolated throughput (same definition, written out again).
double isolated(const FtfInput& in, std::size_t i) {
  const FtfJob& j = in.jobs[i];
  const double n = static_cast<double>(in.jobs.size());
  double sum = 0.0, tput = 0.0;
  for (std::size_t t = 0; t < in.capacity.size(); ++t)
    if (j.rate[t] > 0.0) {
      sum += in.capacity[t] / (n * j.workers);
      tput += j.rate[t] * in.capacity[t] / (n * j.workers);
    }
  return sum > 1.0 ? tput / sum : tput;
}

double rho(const FtfInput& in, std::size_t i, double throughput) {
  const FtfJob& j = in.jobs[i];
  return (j.elapsed + j.remaining / throughput) /
         (j.isolated_elapsed + j.remaining / isolated(in, i));
}

double max_rho(const FtfInput& in, const Matrix& f) {
  double worst = 0.0;
  for (std::size_t i = 0; i < in.jobs.size(); ++i) {
    double tput = 0.0;
    for (std::size_t t = 0; t < in.capacity.size(); ++t) tput += in.jobs[i].rate[t] * f(i, t);
    worst = std::max(worst, rho(in, i, tput));
  }
  return worst;
}

void expect_feasible(const FtfInput& in, const Matrix& f) {
  for (std::size_t t = 0; t < in.capacity.size(); ++t) {
    double used = 0.0;
    for (std::size_t i = 0; i < in.jobs.size(); ++i) {
      EXPECT_GE(f(i, t), -1e-9);
      used += in.jobs[i].workers * f(i, t);
    }
    EXPECT_LE(used, in.capacity[t] + 1e-7) << "type " << t;
  }
  for (std::size_t i = 0; i < in.jobs.size(); ++i) {
    double sum = 0.0;
    for (std::size_t t = 0; t < in.capacity.size(); ++t) sum += f(i, t);
    EXPECT_LE(sum, 1.0 + 1e-7) << "job " << i;
  }
}

TEST(Ftf, TwoIdenticalJobsSplitEqually) {
  // One GPU, two 1-worker jobs at 1 it/s with 100 iterations left, new.
  // T_iso = 1/2, so the denominator is 100 / 0.5 = 200 and rho_i = 0.5 / x_i:
  // x = (1/2, 1/2), rho* = 1.
  FtfInput in;
  in.capacity = {1};
  in.jobs = {ftf_job(1, {1.0}, 100, 0, 0), ftf_job(1, {1.0}, 100, 0, 0)};
  FtfSolution s = solve_ftf(in);
  EXPECT_NEAR(s.isolated_throughput[0], 0.5, 1e-12);
  EXPECT_NEAR(s.rho, 1.0, 1e-5);
  EXPECT_NEAR(s.fraction(0, 0), 0.5, 1e-5);
  EXPECT_NEAR(s.fraction(1, 0), 0.5, 1e-5);
}

TEST(Ftf, JobThatWaitedGetsMore) {
  // As above, but job 0 has waited 200 s with nothing (t = 200, t_iso = 0).
  // rho_0 = (200 + 100 / x) / 200, rho_1 = (100 / (1 - x)) / 200. Equal when
  // 2 + 1/x = 1/(1-x), i.e. 1 - 2x^2 = 0: x = 1/sqrt(2) = 0.70711,
  // rho* = 1 + 0.5 sqrt(2) = 1.70711.
  FtfInput in;
  in.capacity = {1};
  in.jobs = {ftf_job(1, {1.0}, 100, 200, 0), ftf_job(1, {1.0}, 100, 0, 0)};
  FtfSolution s = solve_ftf(in);
  EXPECT_NEAR(s.fraction(0, 0), 1 / std::sqrt(2.0), 1e-5);
  EXPECT_NEAR(s.fraction(1, 0), 1 - 1 / std::sqrt(2.0), 1e-5);
  EXPECT_NEAR(s.rho, 1 + 0.5 * std::sqrt(2.0), 1e-5);

  // Progress counts through t_iso: job 1 with 50 left after 100 s of which
  // its isolated share would have needed 100 (t = t_iso = 100); job 0 has
  // t = 100, t_iso = 0, 100 left. Denominators 200 and 100 + 50 / 0.5 = 200;
  // equal rho when 100 / x = 50 / (1 - x): x = 2/3, rho* = (100 + 150) / 200.
  in.jobs = {ftf_job(1, {1.0}, 100, 100, 0), ftf_job(1, {1.0}, 50, 100, 100)};
  s = solve_ftf(in);
  EXPECT_NEAR(s.fraction(0, 0), 2.0 / 3.0, 1e-5);
  EXPECT_NEAR(s.rho, 1.25, 1e-5);
}

TEST(Ftf, FinishedJobGetsNothingAndOthersGetTheSpare) {
  // Job 2 has nothing left: it gets nothing and does not count. Jobs 0 and 1
  // (2 GPUs, 1 it/s each, 100 left, new; T_iso = 2/3 with n = 3, so the
  // denominator is 150) can each hold one GPU: rho = 100 / 150 = 2/3.
  FtfInput in;
  in.capacity = {2};
  in.jobs = {ftf_job(1, {1.0}, 100, 0, 0), ftf_job(1, {1.0}, 100, 0, 0),
             ftf_job(1, {1.0}, 0, 50, 50)};
  FtfSolution s = solve_ftf(in);
  EXPECT_NEAR(s.rho, 2.0 / 3.0, 1e-5);
  EXPECT_NEAR(s.fraction(0, 0), 1.0, 1e-6);
  EXPECT_NEAR(s.fraction(1, 0), 1.0, 1e-6);
  EXPECT_EQ(s.fraction(2, 0), 0.0);
}

// Capacities in [cap_lo, cap_hi], gangs of 1 to 2^max_pow workers, about
// one rate in five 0 (the model does not run there), a third of the jobs
// (all with all_new) new,
// the others with up to 300 s behind them, at least half of it isolated time.
FtfInput random_instance(std::mt19937& rng, std::size_t jobs, std::size_t types, int cap_lo,
                         int cap_hi, int max_pow, bool all_new = false) {
  std::uniform_real_distribution<double> rate(0.5, 5.0), rem(1000, 20000), u(0, 1);
  std::uniform_int_distribution<int> cap(cap_lo, cap_hi), wpow(0, max_pow);
  FtfInput in;
  for (std::size_t t = 0; t < types; ++t) in.capacity.push_back(cap(rng));
  for (std::size_t i = 0; i < jobs; ++i) {
    std::vector<double> r(types);
    for (double& v : r) v = u(rng) < 0.2 ? 0.0 : rate(rng);
    if (std::all_of(r.begin(), r.end(), [](double v) { return v == 0.0; })) r[0] = rate(rng);
    const double elapsed = all_new || u(rng) < 0.3 ? 0.0 : 300 * u(rng);
    in.jobs.push_back(
        ftf_job(1 << wpow(rng), r, rem(rng), elapsed, elapsed * (0.5 + 0.5 * u(rng))));
  }
  return in;
}

// Job 1's best response to job 0's fractions: fill its time, fastest type
// first, from what job 0 leaves (a fractional knapsack, exact).
double best_response(const FtfInput& in, double f0, double f1) {
  const FtfJob& j = in.jobs[1];
  double left0 = (in.capacity[0] - in.jobs[0].workers * f0) / j.workers;
  double left1 = (in.capacity[1] - in.jobs[0].workers * f1) / j.workers;
  double first = left0, second = left1, r_first = j.rate[0], r_second = j.rate[1];
  if (j.rate[1] > j.rate[0]) std::swap(first, second), std::swap(r_first, r_second);
  const double a = std::min(1.0, std::max(0.0, first));
  const double b = std::min(1.0 - a, std::max(0.0, second));
  return r_first * a + r_second * b;
}

// min over job 0's (f0, f1) of max(rho_0, rho_1 at job 1's best response).
// For a fixed f0, rho_0 does not increase with f1 and rho_1 does not
// decrease, so the best f1 is where they cross: bisection. Over f0 the
// result is quasi-convex (the sublevel sets are projections of convex sets):
// a grid of 1000 steps, refined three times around the best point.
double best_for_f0(const FtfInput& in, double f0) {
  const double w = in.jobs[0].workers;
  auto value = [&](double f1, double& r0, double& r1) {
    r0 = rho(in, 0, in.jobs[0].rate[0] * f0 + in.jobs[0].rate[1] * f1);
    r1 = rho(in, 1, best_response(in, f0, f1));
    return std::max(r0, r1);
  };
  double lo = 0.0, hi = std::min(1.0 - f0, in.capacity[1] / w), r0, r1;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    value(mid, r0, r1);
    (r0 > r1 ? lo : hi) = mid;
  }
  return std::min(value(lo, r0, r1), value(hi, r0, r1));
}

double brute_force(const FtfInput& in) {
  const double max0 = std::min(1.0, in.capacity[0] / in.jobs[0].workers);
  constexpr int kSteps = 1000;
  double from = 0.0, to = max0, best = INFINITY;
  for (int level = 0; level < 4; ++level) {
    const double step = (to - from) / kSteps;
    double at = from;
    for (int a = 0; a <= kSteps; ++a) {
      const double f0 = from + step * a;
      const double v = best_for_f0(in, f0);
      if (v < best) best = v, at = f0;
    }
    from = std::max(0.0, at - step), to = std::min(max0, at + step);
  }
  return best;
}

TEST(Ftf, MatchesBruteForceOnTwoJobsTwoTypes) {
  std::mt19937 rng(20201104);
  int contended = 0;
  for (int trial = 0; trial < 40; ++trial) {
    FtfInput in = random_instance(rng, 2, 2, 1, 2, 1, trial % 2 == 0);
    FtfSolution s = solve_ftf(in);
    contended += s.lp_solves > 2;  // more than the lower bound and the efficiency LP
    const double bf = brute_force(in);
    SCOPED_TRACE("trial " + std::to_string(trial));
    // z* is the top of a bisection bracket of relative width 1e-6: no
    // allocation beats it by more, and the search finds one within that.
    EXPECT_GE(bf, s.rho * (1 - 1e-6));
    EXPECT_LE(bf, s.rho * (1 + 1e-6));
    expect_feasible(in, s.fraction);
    EXPECT_LE(max_rho(in, s.fraction), s.rho * (1 + 1e-6));
  }
  EXPECT_GE(contended, 15);  // 18 of 40 with this seed: the rest sit at the lower bound
  RecordProperty("contended", contended);
}

// The independent formulation: for a given z, max lambda subject to
// T_i(X) >= lambda * R_i / (z D_i - t_i) for every job (rows written with
// lambda as a column, not as bounds), capacity and time rows. z is feasible
// iff lambda >= 1; returns 0 when some z D_i <= t_i.
double lambda_at(const FtfInput& in, double z) {
  const std::size_t n = in.jobs.size(), k = in.capacity.size();
  LinearProgram lp;
  lp.maximize();
  std::vector<int> x(n * k);
  for (int& v : x) v = lp.add_variable(0, kInf);
  const int lambda = lp.add_variable(0, kInf, 1.0);
  for (std::size_t t = 0; t < k; ++t) {
    std::vector<int> v;
    std::vector<double> c;
    for (std::size_t i = 0; i < n; ++i) v.push_back(x[i * k + t]), c.push_back(in.jobs[i].workers);
    lp.add_constraint(v, c, -kInf, in.capacity[t]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const FtfJob& j = in.jobs[i];
    const double gap = z * (j.isolated_elapsed + j.remaining / isolated(in, i)) - j.elapsed;
    if (gap <= 0) return 0.0;
    std::vector<int> v, ones_v;
    std::vector<double> c, ones;
    for (std::size_t t = 0; t < k; ++t) {
      v.push_back(x[i * k + t]), c.push_back(j.rate[t]);
      ones_v.push_back(x[i * k + t]), ones.push_back(1.0);
    }
    lp.add_constraint(ones_v, ones, -kInf, 1.0);
    v.push_back(lambda), c.push_back(-j.remaining / gap);
    lp.add_constraint(v, c, 0.0, kInf);
  }
  EXPECT_EQ(lp.solve(), LpStatus::kOptimal);
  return lp.objective_value();
}

TEST(Ftf, MatchesIndependentLpOnRandomInstances) {
  std::mt19937 rng(4242);
  int solves = 0, contended = 0;
  double worst = 0.0;
  for (int trial = 0; trial < 60; ++trial) {
    const std::size_t jobs = 3 + trial % 6, types = 2 + trial % 2;
    FtfInput in = random_instance(rng, jobs, types, 1, 3, 1, trial % 4 < 2);
    FtfSolution s = solve_ftf(in);
    solves += s.lp_solves;
    contended += s.lp_solves > 2;
    SCOPED_TRACE("trial " + std::to_string(trial));
    expect_feasible(in, s.fraction);
    // z* is attained (the allocation's own max rho) ...
    EXPECT_LE(max_rho(in, s.fraction), s.rho * (1 + 1e-6));
    // ... and equals the independent LP's optimum, found by its own
    // bisection (doubling up from 1, then halving to a relative 1e-9).
    double lo = 0.0, hi = 1.0;
    while (lambda_at(in, hi) < 1.0) lo = hi, hi *= 2;
    while (hi - lo > 1e-9 * hi) {
      const double mid = 0.5 * (lo + hi);
      (lambda_at(in, mid) >= 1.0 ? hi : lo) = mid;
    }
    EXPECT_NEAR(s.rho, hi, 2e-6 * hi);
    worst = std::max(worst, std::abs(s.rho - hi) / hi);
  }
  EXPECT_GE(contended, 35);  // 41 of 60 with these seeds
  RecordProperty("contended", contended);
  RecordProperty("lp_solves", solves);
  RecordProperty("worst_relative_gap_e9", static_cast<int>(worst * 1e9));
}

// Checks every plan against the capacity of each type before passing it on.
class CapacityCheck final : public RoundPolicy {
 public:
  explicit CapacityCheck(std::unique_ptr<RoundPolicy> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  double interval() const override { return inner_->interval(); }
  RoundPlan plan(const SchedulerState& s) override {
    RoundPlan p = inner_->plan(s);
    std::vector<int> used(s.model->capacity.size(), 0);
    for (const Assignment& a : p.run)
      for (DeviceRef d : a.devices) ++used[s.type_of(d)];
    for (std::size_t i : s.running)
      if (!s.lease_ended(s.jobs[i]))
        for (DeviceRef d : s.jobs[i].devices) ++used[s.type_of(d)];
    for (std::size_t t = 0; t < used.size(); ++t)
      EXPECT_LE(used[t], s.model->capacity[t]) << "at " << s.now;
    // Re-solved, or the decision in force again (the points after it stable).
    EXPECT_TRUE(p.recomputed || inner_->stability(s).until > s.now);
    EXPECT_TRUE(std::isfinite(p.estimated_throughput));
    ++plans;
    return p;
  }
  int plans = 0;

 private:
  std::unique_ptr<RoundPolicy> inner_;
};

TEST(Ftf, TwoJobsOnOneGpuTakeTurns) {
  // One slow GPU, two type-b jobs (1 it/s) of 720 iterations at t = 0, no
  // restart cost. x = 1/2 each. Round 0: both have received nothing
  // (priority inf), job j0 first by row. Round 360: j1 now. At 720 each has
  // done 360 iterations, which took 360 / T_iso = 720 s isolated each, so
  // rho is equal and x = 1/2 again; both received half: j0 first, finishing
  // at 1080; j1 finishes at 1440.
  using toy::job;
  Cluster c = toy::toy_cluster({{"slow", 1}});
  Workload w = toy::workload({job("j0", "t", "b", 1, 0, 720), job("j1", "t", "b", 1, 0, 720)});
  ClusterModel model = bind_model(c, toy::toy_profiles(), w, 0.0);
  CapacityCheck p(make_round_policy("ftf", {}));
  SimResult r = simulate(model, w, p, {});
  EXPECT_EQ(r.round_s, 360.0);
  EXPECT_NEAR(toy::rec(r, "j0").finish, 1080.0, 1e-6);
  EXPECT_NEAR(toy::rec(r, "j1").finish, 1440.0, 1e-6);
}

TEST(Ftf, SimulatedWorkloadFinishesWithinCapacity) {
  using toy::job;
  Cluster c = toy::toy_cluster({{"slow", 4}, {"slow", 2}, {"fast", 2}, {"fast", 2}});
  std::vector<JobSpec> specs;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> arrival(0, 3000), iters(500, 8000);
  for (int i = 0; i < 12; ++i) {
    const bool a = i % 3 != 2;
    const int workers = a ? 1 << (i % 3) : 1;
    specs.push_back(job("j" + std::to_string(i), i % 2 ? "x" : "y", a ? "a" : "b", workers,
                        arrival(rng), iters(rng)));
  }
  std::sort(specs.begin(), specs.end(),
            [](const JobSpec& l, const JobSpec& r) { return l.arrival_s < r.arrival_s; });
  Workload w = toy::workload(specs);
  ClusterModel model = bind_model(c, toy::toy_profiles(), w, 10.0);
  RoundPolicyOptions o;
  o.round_s = 120;
  CapacityCheck p(make_round_policy("ftf", o));
  SimResult r = simulate(model, w, p, {});
  EXPECT_GT(p.plans, 10);
  for (const JobRecord& j : r.jobs) {
    EXPECT_FALSE(std::isnan(j.finish)) << j.id;
    EXPECT_NEAR(j.done, j.work, 1e-6 * j.work) << j.id;
  }
}

TEST(Ftf, RejectsTenantLevel) {
  RoundPolicyOptions o;
  o.level = "tenant";
  EXPECT_THROW(make_round_policy("ftf", o), InputError);
}

}  // namespace
}  // namespace fairgpu
