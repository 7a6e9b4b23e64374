// The planning problem of `shockwave` (policy/shockwave.cc has the paper's
// equations and the choices): inputs per job, the aggregated MILP over round
// counts on CBC, its objective for given counts (what the tests' exhaustive
// search evaluates), and the packing of counts into rounds.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "fairgpu/lp.h"
#include "fairgpu/scheduler.h"

namespace fairgpu::policy::shockwave {

// What a plan knows of a job: predicted regimes and times on its fastest
// GPU type f; speed[g] = rate on g / rate on f (0: cannot run on g).
struct PlanJob {
  std::size_t job = 0;
  int workers = 1;
  double total_epochs = 1.0;  // E (work units for a static job)
  double done_epochs = 0.0;   // F
  double remaining_s = 0.0;   // R̂: predicted isolated seconds left on f
  double isolated_done_s = 0.0;
  double mean_epoch_s = 1.0;  // artifact: historical mean epoch time on f
  std::vector<double> speed;  // per GPU type
  // Paper: the predicted regimes left, in order, as (epochs, seconds an
  // epoch on f), cut where the window ends.
  std::vector<std::pair<double, double>> regimes;
  double weight = 1.0;  // ρ̂^k (paper) or π (artifact)
  int max_rounds = 1;   // rounds that can still add progress, <= window
};

struct PlanProblem {
  std::vector<PlanJob> jobs;
  std::vector<int> capacity;  // GPUs per type
  int total_gpus = 0;
  int window = 20;         // T
  double round_s = 120.0;  // D
  double lambda = 1e-3;
  bool artifact = false;
  int max_nodes = 200;
  double gap = 1e-3;
  // Wall-time limit of each CBC solve, seconds (0: none). Only the live
  // manager's asynchronous solves set it; simulations stay deterministic.
  double time_limit_s = 0.0;
};

// rounds[i][g]: rounds of job i (index into problem.jobs) on type g.
using RoundCounts = std::vector<std::vector<int>>;

struct CountsSolution {
  RoundCounts rounds;
  double objective = 0.0;
  LpStatus status = LpStatus::kError;
};

// The aggregated MILP (integers n_ig, Σ_g n_ig <= T, Σ_i w_i n_ig <= m_g T).
// Its LP relaxation rounded to a feasible plan (floors, then the largest
// fractions, then the highest weights while GPU-rounds are left) is the plan
// when it is within the gap of the relaxation's bound, and otherwise the
// fallback when CBC's incumbent at the node limit is worse or missing: a
// plan is never empty for want of an incumbent.
CountsSolution solve_counts(const PlanProblem& problem);
// The objective of eq. 11 (paper) or model B (artifact) at given counts, with
// the continuous variables at their best: what the MILP maximises.
double objective_of(const PlanProblem& problem, const RoundCounts& rounds);
// Rounds of (state job index, GPU type): jobs by weight, highest first, each
// into the earliest rounds with room on its type; never over capacity.
std::vector<std::vector<std::pair<std::size_t, std::size_t>>> pack(const PlanProblem& problem,
                                                                   const RoundCounts& rounds);

// The problem for the active jobs of `state` (weights left at 1).
PlanProblem build_problem(const SchedulerState& state, double round_s, int window, bool artifact,
                          bool regimes_from_mode);
// The GPU type on which the job's current regime runs fastest (the first of
// equals): the type a plan's times are taken on.
std::size_t fastest_type(const Job& job);
// R̂ of one job: predicted isolated seconds left on its fastest type.
double predicted_remaining_s(const SchedulerState& state, const Job& job, bool artifact,
                             bool regimes_from_mode);

// The rank step as the authors' code states it (spec §3.2): with the counts
// fixed, a MILP over y[i,g,t] that keeps each round within capacity and puts
// high-weight jobs early (minimise Σ π_i · mean planned round); a job keeps
// all its rounds whenever they can be packed. Starts from pack()'s plan (so
// the node limit returns it or better) and is pack() above `max_binaries`
// binaries.
std::vector<std::vector<std::pair<std::size_t, std::size_t>>> rank_pack(const PlanProblem& problem,
                                                                        const RoundCounts& rounds,
                                                                        int max_binaries);

}  // namespace fairgpu::policy::shockwave
