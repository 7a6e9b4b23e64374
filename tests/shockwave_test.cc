// Shockwave: the regime predictor against hand-computed Dirichlet means, the
// planner's MILP against an exhaustive search, packing within capacity, and
// the policy in simulation (determinism, every job finishes, re-planning).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "fairgpu/lp.h"
#include "fairgpu/scenario.h"
#include "fairgpu/simulator.h"
#include "policy/shockwave_planner.h"
#include "policy/shockwave_predictor.h"
#include "test_files.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

using policy::shockwave::Observation;
using policy::shockwave::PlanJob;
using policy::shockwave::PlanProblem;
using policy::shockwave::RegimeForecast;
using policy::shockwave::RoundCounts;

void expect_forecast(const std::vector<RegimeForecast>& got,
                     const std::vector<RegimeForecast>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].batch_size, want[i].batch_size) << i;
    EXPECT_NEAR(got[i].epochs, want[i].epochs, 1e-9) << i;
  }
}

TEST(ShockwavePredictor, RestatementRuleGivesThePosteriorMeanAfterEachRegime) {
  // Accordion ResNet-18 bs32 (large 256), N = 90 epochs, K = 3.
  Observation o;
  o.mode = AdaptationMode::kAccordion;
  o.model = "ResNet-18";
  o.max_regimes = 3;
  o.total_epochs = 90;
  o.regime_starts = {0};
  o.regime_batch = {32};
  // Prior Dir(30, 30, 30): mean 30 epochs each, small-large-small.
  expect_forecast(predict_restatement(o), {{32, 30}, {256, 30}, {32, 30}});
  // Ongoing regime 1 after 12 epochs: R = 78 shared by 3 -> 26 each.
  o.epochs_done = 12;
  expect_forecast(predict_restatement(o), {{32, 26}, {256, 26}, {32, 26}});
  // Regime 1 ended after m1 = 27: Dir(27, S, S), S = 63 / 2 = 31.5.
  o.epochs_done = 27;
  o.regime_starts = {0, 27};
  o.regime_batch = {32, 256};
  expect_forecast(predict_restatement(o), {{256, 31.5}, {32, 31.5}});
  // 10 epochs into regime 2: R = 53, 26.5 each (regime 2 lasts 36.5).
  o.epochs_done = 37;
  expect_forecast(predict_restatement(o), {{256, 26.5}, {32, 26.5}});
  // Regime 3 = K: it takes all that is left.
  o.epochs_done = 70;
  o.regime_starts = {0, 27, 60};
  o.regime_batch = {32, 256, 32};
  expect_forecast(predict_restatement(o), {{32, 20}});
  // GNS doubles up to the cap: LM bs10, K = 4 -> 10, 20, 40, 80.
  Observation g;
  g.mode = AdaptationMode::kGns;
  g.model = "LM";
  g.max_regimes = 4;
  g.total_epochs = 40;
  g.regime_starts = {0};
  g.regime_batch = {10};
  expect_forecast(predict_restatement(g), {{10, 10}, {20, 10}, {40, 10}, {80, 10}});
}

TEST(ShockwavePredictor, ArtifactCountUpdateMatchesTheSpecExample) {
  // E = 100: 50 epochs at bs32 then 50 at bs64 (spec §2.2's example).
  std::vector<int> schedule(50, 32);
  schedule.resize(100, 64);
  // F = 0: alpha = (50 + 1, 50); rebased 100*51/101 - 1 = 49.495..., and
  // 100*50/101 = 49.504...; sum 99 -> inflated max(100, 100) = 100.
  expect_forecast(policy::shockwave::predict_artifact(schedule, 0.0),
                  {{32, 100.0 * 51 / 101 - 1}, {64, 100.0 * 50 / 101}});
  // 21 epochs observed (F = 20): alpha = (71, 50); rebased 100*71/121 - 21 =
  // 37.68, 100*50/121 = 41.32; sum 79 -> inflated 80 = E - F: no scaling.
  expect_forecast(policy::shockwave::predict_artifact(schedule, 20.0),
                  {{32, 100.0 * 71 / 121 - 21}, {64, 100.0 * 50 / 121}});
  // F = 60: alpha = (100, 61); 32: 100*100/161 = 62.1 - 50 = 12.1; 64:
  // 100*61/161 = 37.9 - 11 = 26.9; sum 39.0 -> floor(40.0) = 40 = E - F.
  expect_forecast(policy::shockwave::predict_artifact(schedule, 60.0),
                  {{32, 100.0 * 100 / 161 - 50}, {64, 100.0 * 61 / 161 - 11}});
  EXPECT_TRUE(policy::shockwave::predict_artifact(schedule, 100.0).empty());
}

// A random small planning problem on one GPU type of `gpus`.
PlanProblem random_problem(std::mt19937_64& rng, bool artifact, int jobs, int gpus, int window) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  PlanProblem p;
  p.capacity = {gpus};
  p.total_gpus = gpus;
  p.window = window;
  p.round_s = 100.0;
  p.artifact = artifact;
  p.lambda = artifact ? 1e-4 : 0.5;
  p.max_nodes = 100000;
  p.gap = 1e-9;
  for (int i = 0; i < jobs; ++i) {
    PlanJob j;
    j.job = static_cast<std::size_t>(i);
    j.workers = 1 + static_cast<int>(u(rng) * 2.0) * (gpus > 2 ? 1 : 0);
    j.total_epochs = 10;
    j.done_epochs = std::floor(u(rng) * 6);
    // Two regimes; the second faster half the time (GNS-like), so the order
    // binaries matter.
    const double tau1 = 20 + 60 * u(rng), tau2 = u(rng) < 0.5 ? tau1 / 3 : tau1 * 1.5;
    const double left = j.total_epochs - j.done_epochs;
    const double first = std::min(left, 1.0 + std::floor(u(rng) * 3));
    j.regimes = {{first, tau1}};
    if (left > first) j.regimes.push_back({left - first, tau2});
    j.remaining_s = 0;
    for (auto& r : j.regimes) j.remaining_s += r.first * r.second;
    j.isolated_done_s = j.done_epochs * tau1;
    j.mean_epoch_s = tau1;
    j.speed = {1.0};
    j.weight = 0.5 + 2 * u(rng);
    j.max_rounds = window;
    p.jobs.push_back(j);
  }
  return p;
}

double exhaustive_best(const PlanProblem& p) {
  RoundCounts n(p.jobs.size(), std::vector<int>(1, 0));
  double best = -std::numeric_limits<double>::infinity();
  std::function<void(std::size_t, int)> rec = [&](std::size_t i, int used) {
    if (i == p.jobs.size()) {
      best = std::max(best, policy::shockwave::objective_of(p, n));
      return;
    }
    for (int r = 0; r <= p.jobs[i].max_rounds; ++r) {
      if (used + r * p.jobs[i].workers > p.capacity[0] * p.window) break;
      n[i][0] = r;
      rec(i + 1, used + r * p.jobs[i].workers);
    }
  };
  rec(0, 0);
  return best;
}

TEST(ShockwavePlanner, MilpMatchesExhaustiveSearchOnSmallCases) {
  std::mt19937_64 rng(7);
  for (bool artifact : {false, true}) {
    for (int c = 0; c < 12; ++c) {
      PlanProblem p = random_problem(rng, artifact, 3 + c % 2, 2 + c % 2, 3 + c % 3);
      auto sol = policy::shockwave::solve_counts(p);
      ASSERT_EQ(sol.status, LpStatus::kOptimal) << c;
      const double best = exhaustive_best(p);
      EXPECT_NEAR(sol.objective, best, 1e-7 * std::max(1.0, std::abs(best)))
          << (artifact ? "artifact" : "paper") << " case " << c;
    }
  }
}

TEST(ShockwavePlanner, NodeLimitStillPlansTheWindow) {
  // 200 jobs on 64 GPUs over 20 rounds with one branch-and-bound node: plain
  // CBC dives without an incumbent there, and an empty plan leaves the
  // rounds to the fill alone (what 300+ active jobs on the 460-job trace
  // did). Started from the rounded relaxation, the plan uses all 1,280
  // GPU-rounds but less than a gang (the jobs want far more), within every
  // job's rounds.
  std::mt19937_64 rng(11);
  for (bool artifact : {false, true}) {
    PlanProblem p = random_problem(rng, artifact, 200, 64, 20);
    p.max_nodes = 1;
    p.gap = 1e-3;
    const auto sol = policy::shockwave::solve_counts(p);
    ASSERT_TRUE(sol.status == LpStatus::kOptimal || sol.status == LpStatus::kFeasible)
        << to_string(sol.status);
    long used = 0;
    for (std::size_t i = 0; i < p.jobs.size(); ++i) {
      EXPECT_GE(sol.rounds[i][0], 0);
      EXPECT_LE(sol.rounds[i][0], p.jobs[i].max_rounds);
      used += long(sol.rounds[i][0]) * p.jobs[i].workers;
    }
    EXPECT_LE(used, 64 * 20);
    EXPECT_GE(used, 64 * 20 - 1) << (artifact ? "artifact" : "paper");
  }
}

TEST(ShockwavePlanner, ObjectiveByHand) {
  // One job, E = 10, F = 2, regimes (3 epochs at 100 s, 5 at 50 s), D = 100,
  // 4 rounds on 1 GPU, T = 4, weight 1, N = 1, M = 1. Rounds fill regime 1
  // (3 rounds: 3 epochs) then 1 round of regime 2 (2 epochs): progress 5,
  // q = 0.7; PWL log(0.7) = ln 0.6 + (ln 0.8 - ln 0.6) / 0.2 * 0.1. Left after
  // the window: 550 - 400 = 150 s; H = max(150, 150 / 1); Z0 = 200 + 550.
  PlanProblem p;
  p.capacity = {1};
  p.total_gpus = 1;
  p.window = 4;
  p.round_s = 100;
  p.lambda = 1.0;
  PlanJob j;
  j.total_epochs = 10;
  j.done_epochs = 2;
  j.regimes = {{3, 100}, {5, 50}};
  j.remaining_s = 550;
  j.isolated_done_s = 200;
  j.speed = {1.0};
  j.max_rounds = 4;
  p.jobs = {j};
  const double pwl = std::log(0.6) + (std::log(0.8) - std::log(0.6)) / 0.2 * 0.1;
  EXPECT_NEAR(policy::shockwave::objective_of(p, {{4}}), pwl - 150.0 / 750.0, 1e-12);
  auto sol = policy::shockwave::solve_counts(p);
  EXPECT_EQ(sol.rounds[0][0], 4);
}

TEST(ShockwavePlanner, PackingNeverExceedsCapacityAndRanksByWeight) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> gang(0, 3), count(0, 6);
  for (int c = 0; c < 50; ++c) {
    PlanProblem p;
    p.capacity = {8, 4};
    p.window = 6;
    RoundCounts n;
    for (int i = 0; i < 10; ++i) {
      PlanJob j;
      j.job = static_cast<std::size_t>(i);
      j.workers = 1 << gang(rng);
      j.weight = 10.0 - i;
      p.jobs.push_back(j);
      n.push_back({count(rng), count(rng) % 3});
    }
    auto plan = policy::shockwave::pack(p, n);
    for (const auto& round : plan) {
      std::vector<int> used(2, 0);
      std::vector<int> seen(10, 0);
      for (const auto& [job, type] : round) {
        used[type] += p.jobs[job].workers;
        EXPECT_EQ(++seen[job], 1) << "a job twice in one round";
      }
      EXPECT_LE(used[0], 8);
      EXPECT_LE(used[1], 4);
    }
    // The highest-weight job (job 0) gets every round it asked for on each
    // type its gang fits (type 1 holds 4), at most one a round.
    int got = 0;
    for (const auto& round : plan)
      for (const auto& [job, type] : round) got += job == 0;
    EXPECT_EQ(got, std::min(n[0][0] + (p.jobs[0].workers <= 4 ? n[0][1] : 0), 6));
  }
}

TEST(ShockwavePlanner, RankStepKeepsEveryRoundTheGreedyLosesAndPutsHighWeightsFirst) {
  // 2 GPUs, T = 2. H1 (weight 10) and H2 (9) want 1 round each, L (weight 1)
  // wants both: 4 GPU-rounds of 4. Greedy by weight fills round 0 with H1 and
  // H2, so L gets only round 1; the rank MILP runs L in both rounds, H1 in
  // round 0 (the higher weight earlier) and H2 in round 1.
  PlanProblem p;
  p.capacity = {2};
  p.window = 2;
  p.max_nodes = 1000;
  for (double w : {10.0, 9.0, 1.0}) {
    PlanJob j;
    j.job = p.jobs.size();
    j.weight = w;
    p.jobs.push_back(j);
  }
  const RoundCounts n = {{1}, {1}, {2}};
  auto count = [](const auto& plan) {
    std::size_t c = 0;
    for (const auto& r : plan) c += r.size();
    return c;
  };
  EXPECT_EQ(count(policy::shockwave::pack(p, n)), 3u);
  auto plan = policy::shockwave::rank_pack(p, n, 1000);
  EXPECT_EQ(count(plan), 4u);
  ASSERT_EQ(plan.size(), 2u);
  auto has = [](const auto& round, std::size_t job) {
    for (const auto& [j, g] : round)
      if (j == job) return true;
    return false;
  };
  EXPECT_TRUE(has(plan[0], 0));
  EXPECT_TRUE(has(plan[1], 1));
  EXPECT_TRUE(has(plan[0], 2) && has(plan[1], 2));
  // Random instances: never over capacity, never a job twice in a round.
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> gang(0, 2), rounds(0, 5);
  for (int c = 0; c < 20; ++c) {
    PlanProblem q;
    q.capacity = {6, 3};
    q.window = 5;
    RoundCounts m;
    for (int i = 0; i < 8; ++i) {
      PlanJob j;
      j.job = static_cast<std::size_t>(i);
      j.workers = 1 << gang(rng);
      j.weight = 1.0 + i % 3;
      q.jobs.push_back(j);
      m.push_back({rounds(rng), rounds(rng) % 2});
    }
    for (const auto& round : policy::shockwave::rank_pack(q, m, 1000)) {
      std::vector<int> used(2, 0), seen(8, 0);
      for (const auto& [job, type] : round) {
        used[type] += q.jobs[job].workers;
        EXPECT_EQ(++seen[job], 1);
      }
      EXPECT_LE(used[0], 6);
      EXPECT_LE(used[1], 3);
    }
  }
}

const std::string kShockwave = std::string(FAIRGPU_SHARED_DATA) + "/shockwave/";

Scenario canonical_scenario(int jobs) {
  ScenarioOptions o;
  o.trace_path = kShockwave + "120-jobs.trace";
  o.profiles_path = kShockwave + "tacc_throughputs.json";
  o.cluster_path = testing_support::source_path("examples/shockwave-32-v100.json");
  o.restart_overhead_s = 20.0;
  Scenario sc = load_scenario(o);
  sc.workload.jobs.resize(static_cast<std::size_t>(jobs));
  return sc;
}

TEST(ShockwavePolicy, DeterministicAndEveryJobFinishes) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  Scenario sc = canonical_scenario(30);
  for (const char* spec : {"shockwave", "shockwave:variant=artifact"}) {
    auto p1 = make_round_policy(spec, {});
    auto p2 = make_round_policy(spec, {});
    SimResult a = simulate(sc.model, sc.workload, *p1);
    SimResult b = simulate(sc.model, sc.workload, *p2);
    ASSERT_EQ(a.jobs.size(), 30u);
    for (std::size_t i = 0; i < a.jobs.size(); ++i) {
      EXPECT_FALSE(std::isnan(a.jobs[i].finish)) << spec << " job " << i << " starved";
      EXPECT_EQ(a.jobs[i].finish, b.jobs[i].finish) << spec << " job " << i;
    }
    EXPECT_EQ(a.rounds.size(), b.rounds.size());
  }
}

TEST(ShockwavePolicy, HeterogeneousClusterUsesBothTypesAndEveryJobFinishes) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // fairgpu's extension: rounds per GPU type. 4 P100 + 4 V100, 16 generated
  // Shockwave jobs arriving fast enough to need both types.
  const std::string cluster = testing::TempDir() + "/fairgpu-shockwave-pv.json";
  std::ofstream(cluster) << R"({"p100": {"nodes": 1, "gpus_per_node": 4},
                                "v100": {"nodes": 1, "gpus_per_node": 4}})";
  ScenarioOptions o;
  o.cluster_path = cluster;
  o.profiles_path = kShockwave + "tacc_throughputs.json";
  o.generator.style = "shockwave";
  o.generator.jobs = 16;
  o.generator.tenants = 4;
  o.generator.arrivals_per_hour = 600;
  Scenario sc = load_scenario(o);
  for (const char* spec : {"shockwave", "shockwave:variant=artifact"}) {
    auto policy = make_round_policy(spec, {});
    SimResult r = simulate(sc.model, sc.workload, *policy);
    for (const JobRecord& j : r.jobs) EXPECT_FALSE(std::isnan(j.finish)) << spec << " " << j.id;
    double most_busy = 0.0;
    for (const RoundSample& round : r.rounds)
      most_busy = std::max(most_busy, round.busy_gpu_seconds / (round.end - round.start));
    EXPECT_GT(most_busy, 4.0 + 1e-9) << spec << ": never more than one type's GPUs busy";
  }
}

TEST(ShockwavePolicy, ReactiveReplansOnARegimeChangeAndLazyDoesNot) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // One GNS job alone (so nothing else triggers a plan) whose regime changes
  // mid-window: reactive re-plans at the first point after the change, lazy
  // only at its 8-round cap. The artifact variant: the paper's, alone on a
  // one-type cluster, is settled (event-cost simulation: its grants are its
  // own devices whatever a plan says) and makes its first plan only.
  Scenario sc = canonical_scenario(1);  // job 0: LM bs10 GNS, regimes at 11, 21, 22
  auto count_plans = [&](const char* spec) {
    auto policy = make_round_policy(spec, {});
    SimResult r = simulate(sc.model, sc.workload, *policy);
    int plans = 0;
    for (const RoundSample& s : r.rounds) plans += s.recomputed;
    return std::make_pair(plans, r.rounds.size());
  };
  const auto [reactive, rounds] = count_plans("shockwave:variant=artifact:mode=reactive");
  const auto [lazy, rounds_lazy] = count_plans("shockwave:variant=artifact:mode=lazy");
  EXPECT_EQ(count_plans("shockwave:mode=reactive").first, 1);
  EXPECT_EQ(count_plans("shockwave:mode=lazy").first, lazy);
  EXPECT_EQ(rounds, rounds_lazy);
  // Lazy: the first plan and one every 8 rounds.
  EXPECT_EQ(lazy, static_cast<int>((rounds + 7) / 8));
  // Reactive: also after each of the 3 regime changes (unless one falls on
  // a point that re-plans anyway).
  EXPECT_GT(reactive, lazy);
  EXPECT_LE(reactive, lazy + 3);
}

TEST(ShockwavePolicy, AsyncSolveNeverHoldsUpARoundAndIsAdoptedLater) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // solve=async (the live manager's): the scheduling point that starts a
  // solve does not wait for it (its round is the work-conserving fill), and
  // a later point adopts the finished plan.
  Scenario sc = canonical_scenario(12);
  SchedulerState s = make_scheduler_state(sc.model, sc.workload);
  for (std::size_t k = 0; k < s.jobs.size(); ++k) admit_job(s, k);
  auto policy = make_round_policy("shockwave:solve=async:wall=5", {});
  const RoundPlan first = policy->plan(s);
  EXPECT_FALSE(first.recomputed);
  EXPECT_FALSE(first.run.empty()) << "the fill runs jobs while the plan is solved";
  bool adopted = false;
  for (int i = 0; i < 2000 && !adopted; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    adopted = policy->plan(s).recomputed;
  }
  EXPECT_TRUE(adopted) << "no plan adopted within 20 s";
  // The synchronous policy plans at its first point.
  auto sync = make_round_policy("shockwave", {});
  EXPECT_TRUE(sync->plan(s).recomputed);
}

}  // namespace
}  // namespace fairgpu
