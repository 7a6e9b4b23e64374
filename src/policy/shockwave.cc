// `shockwave` — Shockwave (Zheng et al., NSDI 2023): a Volatile Fisher Market
// planned over a window of T rounds, for jobs whose throughput changes with
// their batch size (§4, §6, Appendix G; specs/shockwave.md §3).
//
// Paper variant (default), eq. 11:
//   max (1/(N M)) Σ_j ρ̂_j^k · log UTIL_j − (λ / Z0) · H
//   UTIL_j = (F_j + p_j) / E_j                  epoch progress (eq. 7)
//   ρ̂_j = (L_j + W_j + R̂_j N_avg(j)) / (P̂_j N_avg(j))          FTF estimator (eq. 9)
//   H ≥ Σ_j w_j r_j / M,  H ≥ r_j,  r_j ≥ R̂_j − (isolated seconds planned)   (eq. 10)
// with N active jobs, M GPUs, R̂_j the predicted remaining isolated run time
// (policy/shockwave_predictor.h, restatement rule), P̂_j = isolated time of
// the epochs done + R̂_j, Z0 = Σ_j P̂_j, k = 5, λ = 1e-3, T = 20 rounds of
// 120 s. The log is the concave piecewise-linear one of the authors' code
// (breakpoints 0, .2, .4, .6, .8, 1; ln(1e-6) at 0), written as an epigraph
// u_j ≤ ln(β_i) + slope_i (q − β_i): exact at the breakpoints, no binaries,
// since every weight is ≥ 0. Progress inside the window follows the
// predicted regimes (Appendix G's micro-jobs): y_jk rounds in regime k, at
// most what the regime has left, Σ_k y_jk ≤ the job's rounds, p_j = Σ_k y_jk
// D / τ_jk; where a later regime is faster (GNS), a binary δ_jk keeps the
// order (y_jk ≥ cap_jk δ_jk, y_j,k+1 ≤ T δ_jk), else the LP would run the
// fast regime first.
//
// Aggregated formulation (spec §7, for every size): the objective depends on
// a job's schedule only through its round count, so the MILP decides
// integers n_jg ∈ [0, T] (rounds on GPU type g) with Σ_g n_jg ≤ T and
// Σ_j w_j n_jg ≤ m_g T; the rank step then gives the counts rounds: a MILP
// over y[j,g,t] (spec §3.2's rank_in_schedule_jobs: capacity per round,
// minimise Σ_j π_j · mean planned round, so high-ρ jobs run earlier; a round
// that cannot be packed is dropped rather than overfilling), or above `rank`
// binaries a greedy (highest weight first, earliest rounds with room). A
// final capacity repair drops what would overfill a round. Each round the plan's
// jobs run first, then the rest fill idle GPUs largest remaining time first
// (work-conserving fill, LPT).
//
// Heterogeneous GPUs (fairgpu's extension; the paper evaluated one type,
// Appendix C's multi-resource market): n_jg per type; a round on type g
// counts as σ_jg = rate_g / rate_f rounds on the job's fastest type f, and
// the regimes' epoch times are taken on f.
//
// Re-planning: on an arrival, a completion, every `reopt` rounds (8) and when
// the window is used up; in mode=reactive (the paper's default) also when a
// job enters a new regime, mode=lazy keeps the plan until then (§7).
// The solve is deterministic: CBC with a node limit and a relative gap, no
// wall time (a wall-time limit only belongs in the live manager).
// In the live manager (`solve=async`, which `fairgpu serve` sets) the MILPs
// run on a thread of their own with a wall-time limit (`wall`, 15 s) as
// well: a scheduling point never waits for them. It starts a solve when a
// re-plan is due and none is running (the problem, weights included, is
// built from the state at that point), and uses the last finished plan,
// from the round it has reached since that solve began (none yet: the
// work-conserving fill alone). A plan names jobs by their index in the
// state; the live manager makes a new policy whenever it re-indexes them,
// and a solve still running for the old one is then abandoned.
//
// variant=artifact reproduces the authors' code (spec §3.2, model B): the
// count-based predictor; progress at the job's historical mean epoch time
// (mean profiled epoch duration of epochs 0..F); weights π_j = ρ_j^12 when
// ρ_j > rhomax (1), ρ_j^100 when also R̂_j < D, else 1, with ρ_j = (now +
// R̂_j / share) / T*_j, share = min(1, M / N), T*_j the momentum-smoothed
// fair finish time (0.9 × time-weighted mean of the targets appended after
// each arrival or completion + 0.1 × the latest); objective Σ π_j u_j / (N T)
// − 1e-3 · max_j r_j with r_j ≥ R̂_j − d̄_j p_j; re-planning lazy (arrival,
// completion, every 8 rounds), and the rank step above.
// Choices where the paper is silent: when the largest weight passes 1e6
// (ρ^100 overflows what CBC can use) every weight is divided by the same
// factor so the largest is 1e6, which keeps their order and ratios; a job
// whose progress would pass 100% gets no more utility, so rounds beyond its
// finish are not planned. The relaxation rounded to a feasible plan stands
// in where CBC has no incumbent at the node limit (shockwave_planner.h), so
// no round is left unplanned for want of one.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#include "fairgpu/lp.h"
#include "placement/gang_round.h"
#include "policy/round_policies.h"
#include "policy/shockwave_planner.h"
#include "policy/shockwave_predictor.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy {
namespace {

using shockwave::PlanJob;
using shockwave::PlanProblem;

class Shockwave final : public TimeSharingPolicy {
 public:
  explicit Shockwave(const PolicyOptions& o)
      : TimeSharingPolicy(o),
        artifact_(o.choice("variant") == "artifact"),
        reactive_(o.choice("mode") == "reactive" || (o.choice("mode") == "auto" && !artifact_)),
        window_(static_cast<int>(o.number("window"))),
        reopt_(static_cast<int>(o.number("reopt"))),
        k_(o.number("k") > 0 ? o.number("k") : (artifact_ ? 12.0 : 5.0)),
        lambda_(o.number("lambda")),
        rhomax_(o.number("rhomax")),
        max_nodes_(static_cast<int>(o.number("nodes"))),
        gap_(o.number("gap")),
        regimes_from_mode_(o.choice("regimes") == "mode"),
        rank_binaries_(static_cast<int>(o.number("rank"))),
        async_(o.choice("solve") == "async"),
        wall_s_(o.number("wall")) {}

  // Event-cost simulation (docs/design.md §5), variant=paper, mode=reactive,
  // solve=sync (the paper's defaults): see settled().
  Stability stability(const SchedulerState& s) const override {
    if (settled(s)) return {std::numeric_limits<double>::infinity(), interval(), kUnset};
    return TimeSharingPolicy::stability(s);
  }

  RoundPlan plan(const SchedulerState& s) override {
    placement::GangRound round = gang_round(s);
    if (!round.worth_planning()) return {};
    const double lease_end = s.now + interval();
    bool recomputed = false;
    if (async_) {
      recomputed = adopt_finished_solve();
      if (!solving_ && needs_plan(s)) start_solve(s);
    } else if (needs_plan(s) && !settled(s)) {
      make_plan(s);
      recomputed = true;
    }
    // This round's planned jobs, in rank order, then the work-conserving
    // fill: the others, largest predicted remaining time first.
    std::vector<char> in_round(s.jobs.size(), 0);
    if (round_ptr_ < plan_.size()) {
      for (const auto& [job, type] : plan_[round_ptr_]) {
        const Job& j = s.jobs[job];
        if (!j.active()) continue;
        in_round[job] = 1;
        if (!round.granted(job)) round.grant(job, lease_end, type);
      }
    }
    std::vector<std::pair<double, std::size_t>> rest;
    for (std::size_t i : round.decidable())
      if (!in_round[i]) rest.emplace_back(remaining_seconds(s, i), i);
    std::stable_sort(rest.begin(), rest.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [r, i] : rest)
      if (!round.granted(i)) round.grant(i, lease_end);
    ++round_ptr_;
    ++rounds_since_plan_;
    RoundPlan p = round.plan();
    p.recomputed = recomputed;
    return p;
  }

 private:
  // Seconds of isolated work left on the job's fastest type, as predicted:
  // from this round's plan when it re-planned, else forecast once a round.
  double remaining_seconds(const SchedulerState& s, std::size_t job) {
    if (remaining_at_ != s.now) {
      remaining_at_ = s.now;
      remaining_.clear();
    }
    auto it = remaining_.find(job);
    if (it == remaining_.end())
      it = remaining_
               .emplace(job, shockwave::predicted_remaining_s(s, s.jobs[job], artifact_,
                                                              regimes_from_mode_))
               .first;
    return it->second;
  }

  // No job queued, no gang spread over nodes, and every running job runs on
  // one GPU type only (of those the cluster has): every decidable job is a running one whose lease
  // ended, and each is granted its own devices whatever the plan says (a
  // planned type is its own, or one it cannot run on, which is refused and
  // leaves it to the fill): the plan is the renewals in place, so a re-plan
  // here could not change the decision and is not made (a re-plan every
  // `reopt` rounds while nothing waits only moved round_ptr_ and plan_).
  // Nothing but an event ends it: an arrival queues a job, and with
  // variant=paper the plan made then reads only the state (its weights are
  // eq. 9's, no target series as the artifact's), and it is made whether or
  // not the points before it re-planned (the arrival is not in
  // planned_regime_). mode=lazy keeps a plan across regime changes, so the
  // re-plans skipped here would show later: not claimed.
  bool settled(const SchedulerState& s) const {
    if (async_ || artifact_ || !reactive_ || !none_waits_unspread(s)) return false;
    for (std::size_t i : s.running) {
      const Job& j = s.jobs[i];
      int types = 0;
      for (std::size_t t = 0; t < j.rate_best.size(); ++t)
        types += j.runs_on(t) && s.model->capacity[t] > 0;
      if (types != 1) return false;
    }
    return true;
  }

  bool needs_plan(const SchedulerState& s) const {
    if (plan_.empty() || round_ptr_ >= plan_.size()) return true;
    if (rounds_since_plan_ >= reopt_) return true;
    for (std::size_t i : s.active) {
      auto it = planned_regime_.find(i);
      if (it == planned_regime_.end()) return true;  // arrived since
      if (reactive_ && it->second != s.jobs[i].regime) return true;
    }
    for (const auto& [i, regime] : planned_regime_)
      if (!s.jobs[i].active()) return true;  // completed since
    return false;
  }

  using Plan = std::vector<std::vector<std::pair<std::size_t, std::size_t>>>;

  void make_plan(const SchedulerState& s) {
    PlanProblem problem = prepare(s);
    adopt(solve(problem, rank_binaries_), s);
  }

  static Plan solve(const PlanProblem& problem, int rank_binaries) {
    const auto counts = shockwave::solve_counts(problem);
    return rank_binaries > 0 ? shockwave::rank_pack(problem, counts.rounds, rank_binaries)
                             : shockwave::pack(problem, counts.rounds);
  }

  void adopt(Plan plan, const SchedulerState& s) {
    plan_ = std::move(plan);
    round_ptr_ = 0;
    rounds_since_plan_ = 0;
    planned_regime_.clear();
    for (std::size_t i : s.active) planned_regime_[i] = s.jobs[i].regime;
  }

  // solve=async: one solve at a time, its result handed over under a lock.
  struct AsyncSolve {
    std::mutex mu;
    bool done = false;
    Plan plan;
  };

  void start_solve(const SchedulerState& s) {
    PlanProblem problem = prepare(s);
    problem.time_limit_s = wall_s_;
    solving_ = std::make_shared<AsyncSolve>();
    solve_rounds_ = 0;
    solve_regimes_.clear();
    for (std::size_t i : s.active) solve_regimes_[i] = s.jobs[i].regime;
    // The thread owns its copy of the problem and the hand-over; detached,
    // so that a policy replaced mid-solve does not wait for it.
    std::thread([problem = std::move(problem), out = solving_, rank = rank_binaries_] {
      Plan plan = solve(problem, rank);
      std::lock_guard lock(out->mu);
      out->plan = std::move(plan);
      out->done = true;
    }).detach();
  }

  // The finished solve's plan, from the round reached since it began.
  bool adopt_finished_solve() {
    if (!solving_) return false;
    ++solve_rounds_;  // this round's index in the plan, if it is done
    {
      std::lock_guard lock(solving_->mu);
      if (!solving_->done) return false;
      plan_ = std::move(solving_->plan);
    }
    solving_.reset();
    round_ptr_ = solve_rounds_;
    rounds_since_plan_ = static_cast<int>(solve_rounds_);
    planned_regime_ = std::move(solve_regimes_);
    return true;
  }

  PlanProblem prepare(const SchedulerState& s) {
    // Arrivals and completions since the last plan append fair finish-time
    // targets (the artifact's share series).
    bool membership_changed = planned_regime_.size() != s.active.size();
    for (std::size_t i : s.active) membership_changed |= !planned_regime_.count(i);
    PlanProblem problem =
        shockwave::build_problem(s, interval(), window_, artifact_, regimes_from_mode_);
    remaining_at_ = s.now;
    remaining_.clear();
    for (const PlanJob& pj : problem.jobs) remaining_[pj.job] = pj.remaining_s;
    // ρ^k and ρ^100 outgrow what CBC can weigh beside the makespan term, so
    // when the largest passes kMaxWeight all are scaled down together. A cap
    // instead tied the latest jobs at scale (60-85 of 300-440 at 1e6 on the
    // 460-job trace), and among ties the log's slope (61 below 20% progress,
    // 1.1 above 80%) starved the nearly finished ones ρ^100 is meant to end.
    std::vector<double> log_w;
    double top = -std::numeric_limits<double>::infinity();
    for (const PlanJob& pj : problem.jobs) {
      log_w.push_back(log_weight(s, pj, problem, membership_changed));
      top = std::max(top, log_w.back());
    }
    const double shift = std::max(0.0, top - std::log(kMaxWeight));
    for (std::size_t i = 0; i < problem.jobs.size(); ++i)
      problem.jobs[i].weight = std::exp(log_w[i] - shift);
    problem.lambda = lambda_;
    problem.artifact = artifact_;
    problem.max_nodes = max_nodes_;
    problem.gap = gap_;
    return problem;
  }

  static constexpr double kMaxWeight = 1e6;

  // ln of the job's weight: k ln ρ̂ (paper) or ln π (artifact).
  double log_weight(const SchedulerState& s, const PlanJob& pj, const PlanProblem& problem,
                    bool membership_changed) {
    const Job& j = s.jobs[pj.job];
    if (!artifact_) {
      // Eq. 9: (L + W + R̂ N_avg) / (P̂ N_avg); L + W = time since arrival.
      const double elapsed = s.now - j.arrival;
      const double n_avg =
          elapsed > 0 ? std::max(1.0, (s.contention_integral - j.contention_mark) / elapsed) : 1.0;
      const double predicted_total = pj.isolated_done_s + pj.remaining_s;
      if (!(predicted_total > 0)) return 0.0;
      const double rho = (elapsed + pj.remaining_s * n_avg) / (predicted_total * n_avg);
      return k_ * std::log(std::max(rho, 1e-300));
    }
    // The artifact's fair finish-time target and ρ (spec §3.2).
    const double share = std::min(1.0, s.model->total_gpus / double(problem.jobs.size()));
    auto& series = targets_[pj.job];
    if (membership_changed || series.empty())
      series.push_back({s.now, j.arrival + (pj.isolated_done_s + pj.remaining_s) / share});
    double weighted = 0.0, span = 0.0;
    for (std::size_t v = 0; v < series.size(); ++v) {
      const double until = v + 1 < series.size() ? series[v + 1].first : s.now;
      const double w = std::max(until - series[v].first, interval());  // at least a round
      weighted += w * series[v].second;
      span += w;
    }
    const double target = 0.9 * weighted / span + 0.1 * series.back().second;
    const double rho = (s.now + pj.remaining_s / share) / target;
    if (!(rho > rhomax_)) return 0.0;
    const double exponent = pj.remaining_s < interval() ? 100.0 : k_;
    return exponent * std::log(rho);
  }

  bool artifact_, reactive_;
  int window_, reopt_;
  double k_, lambda_, rhomax_;
  int max_nodes_;
  double gap_;
  bool regimes_from_mode_;
  int rank_binaries_;
  bool async_;
  double wall_s_;
  std::shared_ptr<AsyncSolve> solving_;               // the solve running, if any
  std::size_t solve_rounds_ = 0;                      // rounds begun since it started
  std::map<std::size_t, std::size_t> solve_regimes_;  // planned_regime_ it will bring

  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> plan_;  // rounds of (job, type)
  std::size_t round_ptr_ = 0;
  int rounds_since_plan_ = 0;
  std::map<std::size_t, std::size_t> planned_regime_;  // active jobs when planned, their regime
  std::map<std::size_t, std::vector<std::pair<double, double>>> targets_;  // artifact: (when, T*)
  double remaining_at_ = -1.0;               // the round remaining_ holds
  std::map<std::size_t, double> remaining_;  // job -> R̂ this round
};

}  // namespace

std::vector<OptionSpec> ShockwaveKeys() {
  auto keys = time_sharing_keys(120.0);
  for (auto& k : keys)
    if (k.key == "lease") k.default_value = "120";
  keys.push_back(choice_option("variant", "paper",
                               "paper: eq. 11 with the restatement predictor; artifact: the "
                               "authors' model B, count predictor, lazy re-planning",
                               {"paper", "artifact"}));
  keys.push_back(choice_option("mode", "auto",
                               "re-plan on a regime change (reactive) or not (lazy); auto: "
                               "reactive for paper, lazy for artifact",
                               {"auto", "reactive", "lazy"}));
  keys.push_back(number_option("window", 20, "planning window T, rounds", 1, 200));
  keys.push_back(number_option("reopt", 8, "re-plan at least every this many rounds", 1, 1000));
  keys.push_back(number_option("k", 0,
                               "exponent of the FTF weight rho^k; 0: the variant's (paper 5, "
                               "artifact 12)",
                               0, 200));
  keys.push_back(number_option("lambda", 1e-3, "weight of the makespan term", 0, 1e9));
  keys.push_back(
      number_option("rhomax", 1.0, "artifact: rho above which a job is weighted", 0, 100));
  keys.push_back(number_option(
      "nodes", 200, "CBC branch-and-bound node limit per plan (deterministic budget)", 1, 1e7));
  keys.push_back(number_option("gap", 1e-3, "relative MIP gap at which a plan stops", 0, 1));
  keys.push_back(choice_option("regimes", "profile",
                               "paper predictor's K: the job's profiled regime count, or the "
                               "mode's default (Accordion 3, GNS log2(cap/bs0)+1)",
                               {"profile", "mode"}));
  keys.push_back(choice_option("solve", "sync",
                               "sync: each plan is solved at the scheduling point (simulation: "
                               "deterministic); async: on a thread of its own with a wall-time "
                               "limit, each round using the last finished plan (set by `fairgpu "
                               "serve`)",
                               {"sync", "async"}));
  keys.push_back(number_option(
      "wall", 15, "solve=async: wall-time limit of a plan's CBC solves, seconds", 0.1, 3600));
  keys.push_back(number_option("rank", 6000,
                               "rank step as a MILP up to this many binaries (jobs x rounds); "
                               "above it, or 0, the greedy packing",
                               0, 1e7));
  return keys;
}

std::unique_ptr<RoundPolicy> NewShockwavePolicy(const PolicyOptions& options) {
  return std::make_unique<Shockwave>(options);
}

}  // namespace fairgpu::policy
