// Shockwave's planning problem (policy/shockwave_planner.h; the equations and
// choices are in policy/shockwave.cc).
#include "policy/shockwave_planner.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

#include "policy/shockwave_predictor.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy::shockwave {
namespace {

// The authors' piecewise-linear log: breakpoints 0, .2, ..., 1, ln(1e-6) at 0.
constexpr std::array<double, 6> kBases = {0.0, 0.2, 0.4, 0.6, 0.8, 1.0};
double log_at(double b) { return std::log(b > 0 ? b : 1e-6); }
double slope(std::size_t i) {
  return (log_at(kBases[i + 1]) - log_at(kBases[i])) / (kBases[i + 1] - kBases[i]);
}
double pwl_log(double q) {
  double u = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i + 1 < kBases.size(); ++i)
    u = std::min(u, log_at(kBases[i]) + slope(i) * (q - kBases[i]));
  return u;
}

// Whether some later regime is faster than an earlier one: then the order
// needs binaries.
bool needs_order(const PlanJob& j) {
  for (std::size_t a = 0; a < j.regimes.size(); ++a)
    for (std::size_t b = a + 1; b < j.regimes.size(); ++b)
      if (j.regimes[b].second < j.regimes[a].second) return true;
  return false;
}

double effective_rounds(const PlanJob& j, const std::vector<int>& n) {
  double e = 0.0;
  for (std::size_t g = 0; g < n.size(); ++g) e += j.speed[g] * n[g];
  return e;
}

double z0_of(const PlanProblem& p) {
  double z = 0.0;
  for (const PlanJob& j : p.jobs) z += j.isolated_done_s + j.remaining_s;
  return z > 0 ? z : 1.0;
}

double utility_scale(const PlanProblem& p) {
  const auto n = static_cast<double>(std::max<std::size_t>(1, p.jobs.size()));
  return 1.0 / (n * (p.artifact ? p.window : p.total_gpus));
}

// Epoch time on type f at batch size bs for job j (epochs/s from the bound
// profiles); falls back to the current regime's.
double epoch_seconds(const SchedulerState& s, const Job& j, int bs, std::size_t f) {
  for (const Job::Regime& r : j.regimes)
    if (r.batch_size == bs && r.rate_best[f] > 0) return 1.0 / r.rate_best[f];
  const ClusterModel& m = *s.model;
  if (const JobTypeProfile* p = m.profiles.find(batch_job_type(j.model, bs))) {
    const double rate = p->rate(m.cluster.gpu_types[f], j.workers, j.workers > m.largest_node[f]);
    if (rate > 0 && j.samples_per_epoch > 0) return j.samples_per_epoch / bs / rate;
  }
  return 1.0 / j.rate_best[f];
}

struct Forecast {
  double remaining_s = 0.0, isolated_done_s = 0.0, mean_epoch_s = 1.0;
  std::vector<std::pair<double, double>> regimes;  // (epochs, s/epoch on f)
};

Forecast forecast(const SchedulerState& s, const Job& j, bool artifact, bool from_mode) {
  Forecast out;
  const std::size_t f = fastest_type(j);
  const double done = done_now(s, j);
  if (!j.adaptive()) {
    const double tau = 1.0 / j.rate_best[f];
    out.remaining_s = (j.work - done) * tau;
    out.isolated_done_s = done * tau;
    out.mean_epoch_s = tau;
    out.regimes = {{j.work - done, tau}};
    return out;
  }
  // Isolated time of the epochs done, and the historical mean epoch time of
  // epochs 0..F (the artifact's interpolate_epoch_duration).
  const double last_epoch = std::min(std::floor(done + 1e-9), j.work - 1.0);
  double start = 0.0, hist_sum = 0.0, hist_n = 0.0;
  for (const Job::Regime& r : j.regimes) {
    const double tau = 1.0 / r.rate_best[f];
    out.isolated_done_s += std::max(0.0, std::min(done, r.end_epoch) - start) * tau;
    const double upto = std::min(r.end_epoch, last_epoch + 1.0);
    if (upto > start) {
      hist_sum += (upto - start) * tau;
      hist_n += upto - start;
    }
    start = r.end_epoch;
  }
  out.mean_epoch_s = hist_n > 0 ? hist_sum / hist_n : 1.0 / j.rate_best[f];
  std::vector<RegimeForecast> fc;
  if (artifact) {
    fc = predict_artifact(profiled_schedule(j), done);
  } else {
    Observation o = observe(s, j);
    if (from_mode)
      o.max_regimes =
          std::max<int>(default_max_regimes(j.mode, j.model, j.regimes.front().batch_size),
                        static_cast<int>(o.regime_starts.size()));
    fc = predict_restatement(o);
  }
  for (const RegimeForecast& r : fc) {
    const double tau = epoch_seconds(s, j, r.batch_size, f);
    out.remaining_s += r.epochs * tau;
    if (r.epochs > 0) out.regimes.emplace_back(r.epochs, tau);
  }
  return out;
}

}  // namespace

std::size_t fastest_type(const Job& j) {
  std::size_t f = 0;
  for (std::size_t g = 1; g < j.rate_best.size(); ++g)
    if (j.rate_best[g] > j.rate_best[f]) f = g;
  return f;
}

double predicted_remaining_s(const SchedulerState& s, const Job& j, bool artifact,
                             bool regimes_from_mode) {
  return forecast(s, j, artifact, regimes_from_mode).remaining_s;
}

PlanProblem build_problem(const SchedulerState& s, double round_s, int window, bool artifact,
                          bool regimes_from_mode) {
  PlanProblem p;
  p.capacity = s.model->capacity;
  for (std::size_t g = 0; g < p.capacity.size() && g < s.reserved.size(); ++g)
    p.capacity[g] -= s.reserved[g];
  p.total_gpus = std::accumulate(p.capacity.begin(), p.capacity.end(), 0);
  p.window = window;
  p.round_s = round_s;
  p.artifact = artifact;
  for (std::size_t i : s.active) {
    const Job& j = s.jobs[i];
    const double done = done_now(s, j);
    if (!(j.work - done > 1e-9)) continue;  // finishing now
    const std::size_t f = fastest_type(j);
    PlanJob pj;
    pj.job = i;
    pj.workers = j.workers;
    pj.total_epochs = j.work;
    pj.done_epochs = done;
    Forecast fc = forecast(s, j, artifact, regimes_from_mode);
    pj.remaining_s = fc.remaining_s;
    pj.isolated_done_s = fc.isolated_done_s;
    pj.mean_epoch_s = fc.mean_epoch_s;
    pj.speed.resize(j.rate_best.size());
    for (std::size_t g = 0; g < pj.speed.size(); ++g) pj.speed[g] = j.rate_best[g] / j.rate_best[f];
    // Regimes within reach of the window (in rounds on f).
    double reach = 0.0;
    for (const auto& r : fc.regimes) {
      if (reach >= window) break;
      pj.regimes.push_back(r);
      reach += r.first * r.second / round_s;
    }
    // Rounds that can add progress: the artifact's progress runs at the
    // historical mean, so its useful rounds go by that too.
    const double needed_s =
        artifact ? std::max(fc.remaining_s, (j.work - done) * fc.mean_epoch_s) : fc.remaining_s;
    double slowest = 1.0;
    for (double v : pj.speed)
      if (v > 0) slowest = std::min(slowest, v);
    pj.max_rounds = static_cast<int>(
        std::min<double>(window, std::ceil(needed_s / (round_s * slowest) - 1e-9) + 1));
    p.jobs.push_back(std::move(pj));
  }
  return p;
}

namespace {

// The aggregated model, integer or (integrality relaxed) its LP relaxation,
// with the variables n_ig.
struct CountsModel {
  LinearProgram lp;
  std::vector<std::vector<int>> n;  // (job, type) -> variable, -1: none
};

CountsModel build_counts_model(const PlanProblem& p, bool integer) {
  CountsModel m;
  LinearProgram& lp = m.lp;
  const std::size_t types = p.capacity.size();
  lp.maximize();
  const double scale = utility_scale(p);
  const double D = p.round_s, T = p.window;
  // Max-remaining (artifact) or makespan bound H (paper).
  const int h = lp.add_variable(0.0, kInf, p.artifact ? -p.lambda : -p.lambda / z0_of(p));
  std::vector<int> h_sum_vars;
  std::vector<double> h_sum_coefs;
  m.n.assign(p.jobs.size(), std::vector<int>(types, -1));
  std::vector<std::vector<int>> cap_vars(types);
  std::vector<std::vector<double>> cap_coefs(types);
  for (std::size_t i = 0; i < p.jobs.size(); ++i) {
    const PlanJob& j = p.jobs[i];
    std::vector<int> rounds_vars;
    std::vector<double> ones, speeds;
    for (std::size_t g = 0; g < types; ++g) {
      if (!(j.speed[g] > 0) || j.workers > p.capacity[g]) continue;
      m.n[i][g] = lp.add_variable(0.0, j.max_rounds, 0.0, integer);
      rounds_vars.push_back(m.n[i][g]);
      ones.push_back(1.0);
      speeds.push_back(j.speed[g]);
      cap_vars[g].push_back(m.n[i][g]);
      cap_coefs[g].push_back(j.workers);
    }
    if (rounds_vars.empty()) continue;
    lp.add_constraint(rounds_vars, ones, 0.0, T);
    const int u = lp.add_variable(-kInf, kInf, scale * j.weight);
    const int r = lp.add_variable(0.0, kInf, 0.0);
    // progress p as a variable in both variants
    const int prog = lp.add_variable(0.0, std::max(0.0, j.total_epochs - j.done_epochs), 0.0);
    if (p.artifact) {
      // d̄ p <= D Σ σ n ;  r >= R̂ − d̄ p
      std::vector<int> vars = rounds_vars;
      std::vector<double> coefs;
      for (double v : speeds) coefs.push_back(-D * v);
      vars.push_back(prog);
      coefs.push_back(j.mean_epoch_s);
      lp.add_constraint(vars, coefs, -kInf, 0.0);
      lp.add_constraint({r, prog}, {1.0, j.mean_epoch_s}, j.remaining_s, kInf);
    } else {
      // y_k in [0, cap_k] rounds on f; Σ y <= Σ σ n; p = Σ y D / τ_k;
      // r >= R̂ − D Σ y.
      std::vector<int> ys;
      for (const auto& [epochs, tau] : j.regimes)
        ys.push_back(lp.add_variable(0.0, epochs * tau / D, 0.0));
      std::vector<int> vars = ys;
      std::vector<double> coefs(ys.size(), 1.0);
      for (std::size_t v = 0; v < rounds_vars.size(); ++v) {
        vars.push_back(rounds_vars[v]);
        coefs.push_back(-speeds[v]);
      }
      lp.add_constraint(vars, coefs, -kInf, 0.0);
      std::vector<int> pv = ys;
      std::vector<double> pc;
      for (const auto& [epochs, tau] : j.regimes) pc.push_back(D / tau);
      pv.push_back(prog);
      pc.push_back(-1.0);
      lp.add_constraint(pv, pc, 0.0, 0.0);
      std::vector<int> rv = ys;
      std::vector<double> rc(ys.size(), D);
      rv.push_back(r);
      rc.push_back(1.0);
      lp.add_constraint(rv, rc, j.remaining_s, kInf);
      if (needs_order(j)) {
        for (std::size_t k = 0; k + 1 < ys.size(); ++k) {
          const double cap = j.regimes[k].first * j.regimes[k].second / D;
          const int delta = lp.add_variable(0.0, 1.0, 0.0, integer);
          lp.add_constraint({ys[k], delta}, {1.0, -cap}, 0.0, kInf);
          lp.add_constraint({ys[k + 1], delta}, {1.0, -T}, -kInf, 0.0);
        }
      }
      h_sum_vars.push_back(r);
      h_sum_coefs.push_back(-double(j.workers) / p.total_gpus);
    }
    // u <= ln(β_i) + s_i ((F + p)/E − β_i)
    for (std::size_t s = 0; s + 1 < kBases.size(); ++s) {
      const double sl = slope(s);
      lp.add_constraint({u, prog}, {1.0, -sl / j.total_epochs}, -kInf,
                        log_at(kBases[s]) + sl * (j.done_epochs / j.total_epochs - kBases[s]));
    }
    lp.add_constraint({h, r}, {1.0, -1.0}, 0.0, kInf);
  }
  if (!p.artifact && !h_sum_vars.empty()) {
    h_sum_vars.push_back(h);
    h_sum_coefs.push_back(1.0);
    lp.add_constraint(h_sum_vars, h_sum_coefs, 0.0, kInf);
  }
  for (std::size_t g = 0; g < types; ++g)
    if (!cap_vars[g].empty())
      lp.add_constraint(cap_vars[g], cap_coefs[g], -kInf, p.capacity[g] * T);
  return m;
}

// Integral counts near the LP relaxation's, within every constraint: round
// down, then round up the largest fractions while a type has GPU-rounds
// left, then give what is still left to the highest weights (a round more
// never lowers the objective).
RoundCounts round_relaxation(const PlanProblem& p, const CountsModel& relaxed) {
  const std::size_t types = p.capacity.size();
  RoundCounts n(p.jobs.size(), std::vector<int>(types, 0));
  std::vector<long> free(types);
  for (std::size_t g = 0; g < types; ++g) free[g] = long(p.capacity[g]) * p.window;
  std::vector<int> total(p.jobs.size(), 0);
  struct Up {
    double fraction;
    std::size_t job, type;
  };
  std::vector<Up> ups;
  for (std::size_t i = 0; i < p.jobs.size(); ++i)
    for (std::size_t g = 0; g < types; ++g) {
      if (relaxed.n[i][g] < 0) continue;
      const double x = relaxed.lp.value(relaxed.n[i][g]);
      n[i][g] = static_cast<int>(std::floor(x + 1e-6));
      free[g] -= long(n[i][g]) * p.jobs[i].workers;
      total[i] += n[i][g];
      if (x - n[i][g] > 1e-6) ups.push_back({x - n[i][g], i, g});
    }
  auto try_add = [&](std::size_t i, std::size_t g) {
    const PlanJob& j = p.jobs[i];
    if (relaxed.n[i][g] < 0 || total[i] >= p.window || n[i][g] >= j.max_rounds ||
        free[g] < j.workers)
      return false;
    ++n[i][g];
    ++total[i];
    free[g] -= j.workers;
    return true;
  };
  std::stable_sort(ups.begin(), ups.end(),
                   [](const Up& a, const Up& b) { return a.fraction > b.fraction; });
  for (const Up& up : ups) try_add(up.job, up.type);
  std::vector<std::size_t> by_weight(p.jobs.size());
  std::iota(by_weight.begin(), by_weight.end(), 0);
  std::stable_sort(by_weight.begin(), by_weight.end(), [&](std::size_t a, std::size_t b) {
    return p.jobs[a].weight > p.jobs[b].weight;
  });
  for (std::size_t i : by_weight)
    for (std::size_t g = 0; g < types; ++g)
      while (try_add(i, g)) {
      }
  return n;
}

}  // namespace

CountsSolution solve_counts(const PlanProblem& p) {
  CountsSolution out;
  const std::size_t types = p.capacity.size();
  out.rounds.assign(p.jobs.size(), std::vector<int>(types, 0));
  if (p.jobs.empty()) {
    out.status = LpStatus::kOptimal;
    return out;
  }
  // Plain branch and bound (CBC gets no heuristics here) can use up its node
  // budget without an incumbent: at 160+ jobs it did on a fifth of the plans
  // of the 460-job trace and stopped at weak ones on almost half, which left
  // those rounds to the fill alone. The relaxation rounded to a feasible plan
  // is the fallback, and the plan when it is within the gap of the bound.
  CountsModel relaxed = build_counts_model(p, false);
  RoundCounts start;
  double start_objective = -std::numeric_limits<double>::infinity();
  if (relaxed.lp.solve() == LpStatus::kOptimal) {
    start = round_relaxation(p, relaxed);
    start_objective = objective_of(p, start);
    const double bound = relaxed.lp.objective_value();
    if (bound - start_objective <= p.gap * std::max(1.0, std::abs(bound))) {
      out.rounds = start;
      out.objective = start_objective;
      out.status = LpStatus::kOptimal;
      return out;
    }
  }
  CountsModel model = build_counts_model(p, true);
  LpSolveOptions opt;
  opt.max_nodes = p.max_nodes;
  opt.relative_gap = p.gap;
  opt.time_limit_seconds = p.time_limit_s;
  out.status = model.lp.solve(opt);
  if (out.status == LpStatus::kOptimal || out.status == LpStatus::kFeasible) {
    for (std::size_t i = 0; i < p.jobs.size(); ++i)
      for (std::size_t g = 0; g < types; ++g)
        if (model.n[i][g] >= 0)
          out.rounds[i][g] = static_cast<int>(std::lround(model.lp.value(model.n[i][g])));
    out.objective = objective_of(p, out.rounds);
  }
  const bool solved = out.status == LpStatus::kOptimal || out.status == LpStatus::kFeasible;
  if (!start.empty() &&
      (!solved || start_objective > out.objective + 1e-9 * (1.0 + std::abs(out.objective)))) {
    out.rounds = start;
    out.objective = start_objective;
    out.status = LpStatus::kFeasible;
  }
  return out;
}

double objective_of(const PlanProblem& p, const RoundCounts& rounds) {
  const double scale = utility_scale(p);
  const double D = p.round_s;
  double utility = 0.0, max_r = 0.0, sum_wr = 0.0;
  for (std::size_t i = 0; i < p.jobs.size(); ++i) {
    const PlanJob& j = p.jobs[i];
    const double eff = effective_rounds(j, rounds[i]);
    const double left = std::max(0.0, j.total_epochs - j.done_epochs);
    double progress = 0.0, r = 0.0;
    if (p.artifact) {
      progress = std::min(left, D * eff / j.mean_epoch_s);
      r = std::max(0.0, j.remaining_s - j.mean_epoch_s * progress);
    } else {
      // Regimes in order, each up to its cap.
      double budget = eff, used = 0.0;
      for (const auto& [epochs, tau] : j.regimes) {
        const double y = std::min(budget, epochs * tau / D);
        budget -= y;
        used += y;
        progress += y * D / tau;
      }
      progress = std::min(progress, left);
      r = std::max(0.0, j.remaining_s - D * used);
    }
    utility += scale * j.weight * pwl_log((j.done_epochs + progress) / j.total_epochs);
    max_r = std::max(max_r, r);
    sum_wr += j.workers * r;
  }
  if (p.artifact) return utility - p.lambda * max_r;
  const double h = std::max(max_r, sum_wr / std::max(1, p.total_gpus));
  return utility - p.lambda / z0_of(p) * h;
}

std::vector<std::vector<std::pair<std::size_t, std::size_t>>> pack(const PlanProblem& p,
                                                                   const RoundCounts& rounds) {
  const std::size_t types = p.capacity.size();
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> plan(
      static_cast<std::size_t>(p.window));
  std::vector<std::vector<int>> free(plan.size(), p.capacity);
  std::vector<std::size_t> order(p.jobs.size());
  std::iota(order.begin(), order.end(), 0);
  // Rank: highest weight first; ties to more rounds, then arrival order.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (p.jobs[a].weight != p.jobs[b].weight) return p.jobs[a].weight > p.jobs[b].weight;
    int na = std::accumulate(rounds[a].begin(), rounds[a].end(), 0);
    int nb = std::accumulate(rounds[b].begin(), rounds[b].end(), 0);
    return na > nb;
  });
  for (std::size_t i : order) {
    const PlanJob& j = p.jobs[i];
    std::vector<char> used(plan.size(), 0);
    for (std::size_t g = 0; g < types; ++g) {
      int want = rounds[i][g];
      for (std::size_t t = 0; t < plan.size() && want > 0; ++t) {
        if (used[t] || free[t][g] < j.workers) continue;
        free[t][g] -= j.workers;
        used[t] = 1;
        plan[t].emplace_back(j.job, g);
        --want;
      }
    }
  }
  return plan;
}

}  // namespace fairgpu::policy::shockwave

namespace fairgpu::policy::shockwave {

std::vector<std::vector<std::pair<std::size_t, std::size_t>>> rank_pack(const PlanProblem& p,
                                                                        const RoundCounts& rounds,
                                                                        int max_binaries) {
  const std::size_t types = p.capacity.size();
  const auto window = static_cast<std::size_t>(p.window);
  double top = 0.0;
  std::size_t binaries = 0;
  for (std::size_t i = 0; i < p.jobs.size(); ++i) {
    top = std::max(top, p.jobs[i].weight);
    for (std::size_t g = 0; g < types; ++g) binaries += rounds[i][g] > 0 ? window : 0;
  }
  if (binaries == 0 || static_cast<int>(binaries) > max_binaries || !(top > 0))
    return pack(p, rounds);
  // y[i,g,t] in {0,1}: Σ_t y <= n_ig; Σ_g y[i,g,t] <= 1; Σ_i w_i Σ... <= m_g per (g,t).
  // Minimise Σ (π_i/π_max · t / (n_i T) − 2) y: every placed round is worth
  // more than any reordering, and among placements high weights go early.
  LinearProgram lp;
  lp.minimize();
  std::vector<std::vector<std::pair<std::size_t, int>>> vars(p.jobs.size());  // (g*T+t, var)
  std::vector<std::vector<int>> cap_vars(types * window);
  std::vector<std::vector<double>> cap_coefs(types * window);
  for (std::size_t i = 0; i < p.jobs.size(); ++i) {
    const PlanJob& j = p.jobs[i];
    const int n_total = std::accumulate(rounds[i].begin(), rounds[i].end(), 0);
    std::vector<std::vector<int>> per_round(window);
    for (std::size_t g = 0; g < types; ++g) {
      if (rounds[i][g] <= 0) continue;
      std::vector<int> row;
      for (std::size_t t = 0; t < window; ++t) {
        const double cost =
            j.weight / top * static_cast<double>(t) / (n_total * static_cast<double>(window)) - 2.0;
        const int v = lp.add_variable(0.0, 1.0, cost, true);
        vars[i].emplace_back(g * window + t, v);
        row.push_back(v);
        per_round[t].push_back(v);
        cap_vars[g * window + t].push_back(v);
        cap_coefs[g * window + t].push_back(j.workers);
      }
      lp.add_constraint(row, std::vector<double>(row.size(), 1.0), -kInf, rounds[i][g]);
    }
    for (const auto& r : per_round)
      if (r.size() > 1) lp.add_constraint(r, std::vector<double>(r.size(), 1.0), -kInf, 1.0);
  }
  for (std::size_t g = 0; g < types; ++g)
    for (std::size_t t = 0; t < window; ++t)
      if (!cap_vars[g * window + t].empty())
        lp.add_constraint(cap_vars[g * window + t], cap_coefs[g * window + t], -kInf,
                          p.capacity[g]);
  // Start from the greedy packing, so the node limit returns it or better.
  const auto greedy = pack(p, rounds);
  std::vector<std::size_t> plan_index(p.jobs.empty() ? 0 : p.jobs.back().job + 1, 0);
  for (std::size_t i = 0; i < p.jobs.size(); ++i) {
    if (plan_index.size() <= p.jobs[i].job) plan_index.resize(p.jobs[i].job + 1, 0);
    plan_index[p.jobs[i].job] = i;
  }
  std::vector<double> start(static_cast<std::size_t>(lp.num_variables()), 0.0);
  for (std::size_t t = 0; t < greedy.size(); ++t)
    for (const auto& [job, g] : greedy[t])
      for (const auto& [slot, v] : vars[plan_index[job]])
        if (slot == g * window + t) start[static_cast<std::size_t>(v)] = 1.0;
  LpSolveOptions opt;
  opt.max_nodes = p.max_nodes;
  opt.relative_gap = p.gap;
  opt.time_limit_seconds = p.time_limit_s;
  opt.initial_solution = std::move(start);
  const LpStatus st = lp.solve(opt);
  if (st != LpStatus::kOptimal && st != LpStatus::kFeasible) return greedy;
  // Rounds in rank order (weight, highest first), with a capacity repair in
  // case an incumbent bends a row within tolerance.
  std::vector<std::size_t> order(p.jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return p.jobs[a].weight > p.jobs[b].weight;
  });
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> plan(window);
  std::vector<std::vector<int>> free(window, p.capacity);
  for (std::size_t i : order)
    for (const auto& [slot, v] : vars[i]) {
      if (lp.value(v) < 0.5) continue;
      const std::size_t g = slot / window, t = slot % window;
      if (free[t][g] < p.jobs[i].workers) continue;
      free[t][g] -= p.jobs[i].workers;
      plan[t].emplace_back(p.jobs[i].job, g);
    }
  return plan;
}

}  // namespace fairgpu::policy::shockwave
