// `allox` (AlloX, EuroSys 2020 §3-4; src/policy/allox.cc): a batch arriving
// together gets the schedule of minimum average JCT, checked against an
// exhaustive search written here independently of the matching; the α knob
// changes which tenant's jobs start first; gangs start all or nothing.
// Restart overhead is 0 and every processing time an integer number of
// seconds, with a scheduling point every second, so the simulated JCTs are
// exact.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fairgpu/scheduler.h"
#include "fairgpu/simulator.h"
#include "toy_model.h"

namespace fairgpu {
namespace {

using toy::job;
using toy::rec;
using toy::toy_cluster;
using toy::workload;

SimResult run(const Cluster& c, const ProfileCatalogue& profiles, const Workload& w, double alpha) {
  ClusterModel model = bind_model(c, profiles, w, 0.0);
  RoundPolicyOptions o;
  o.round_s = 1.0;
  auto p = make_round_policy(fmt::format("allox:alpha={}", alpha), o);
  return simulate(model, w, *p);
}

// ---- batch: matching vs exhaustive search ---------------------------------

struct Instance {
  std::vector<int> gpus;                    // per type: slow, fast
  std::vector<std::vector<double>> p;       // per job: seconds on slow, fast
  ProfileCatalogue profiles;
  Workload work;
};

// Rates are integers in 1..6 it/s and iterations multiples of 60, so every
// processing time is a whole number of seconds.
Instance random_instance(std::uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Instance in;
  in.gpus = {uniform(1, 2), uniform(1, 2)};
  in.profiles.source = "allox-test";
  const int kinds = 3;
  for (int k = 0; k < kinds; ++k) {
    JobTypeProfile t;
    t.name = "m" + std::to_string(k);
    t.consolidated["slow"][1] = uniform(1, 6);
    t.consolidated["fast"][1] = uniform(1, 6);
    in.profiles.job_types.push_back(t);
  }
  const int n = uniform(5, 8);
  std::vector<JobSpec> jobs;
  for (int i = 0; i < n; ++i) {
    const int kind = uniform(0, kinds - 1);
    const double iterations = 60.0 * uniform(1, 5);
    jobs.push_back(job("j" + std::to_string(i), "t" + std::to_string(i % 3),
                       "m" + std::to_string(kind), 1, 0, iterations));
    const auto& rates = in.profiles.job_types[static_cast<std::size_t>(kind)].consolidated;
    in.p.push_back({iterations / rates.at("slow").at(1), iterations / rates.at("fast").at(1)});
  }
  in.work = workload(jobs);
  return in;
}

Cluster instance_cluster(const Instance& in) {
  std::vector<std::pair<std::string, int>> nodes;
  for (int g = 0; g < in.gpus[0]; ++g) nodes.emplace_back("slow", 1);
  for (int g = 0; g < in.gpus[1]; ++g) nodes.emplace_back("fast", 1);
  return toy_cluster(nodes);
}

// Minimum sum of completion times over every assignment of jobs to GPUs and
// every order on each GPU (all permutations, no scheduling rule assumed).
double exhaustive_total_jct(const Instance& in) {
  std::vector<int> gpu_type;
  for (int t = 0; t < 2; ++t)
    for (int g = 0; g < in.gpus[static_cast<std::size_t>(t)]; ++g) gpu_type.push_back(t);
  const std::size_t n = in.p.size(), m = gpu_type.size();
  // best[type][subset]: the best order of a subset of jobs on one GPU.
  std::vector<std::vector<double>> best(2, std::vector<double>(std::size_t{1} << n));
  for (int t = 0; t < 2; ++t) {
    for (std::size_t mask = 0; mask < best[0].size(); ++mask) {
      std::vector<std::size_t> order;
      for (std::size_t j = 0; j < n; ++j)
        if (mask >> j & 1) order.push_back(j);
      double b = std::numeric_limits<double>::infinity();
      do {
        double clock = 0.0, sum = 0.0;
        for (std::size_t j : order) sum += clock += in.p[j][static_cast<std::size_t>(t)];
        b = std::min(b, sum);
      } while (std::next_permutation(order.begin(), order.end()));
      best[static_cast<std::size_t>(t)][mask] = b;
    }
  }
  double opt = std::numeric_limits<double>::infinity();
  std::vector<std::size_t> on(n, 0);  // GPU of each job, counted in base m
  while (true) {
    std::vector<std::size_t> mask(m, 0);
    for (std::size_t j = 0; j < n; ++j) mask[on[j]] |= std::size_t{1} << j;
    double total = 0.0;
    for (std::size_t g = 0; g < m; ++g) total += best[static_cast<std::size_t>(gpu_type[g])][mask[g]];
    opt = std::min(opt, total);
    std::size_t j = 0;
    while (j < n && ++on[j] == m) on[j++] = 0;
    if (j == n) break;
  }
  return opt;
}

TEST(Allox, BatchMatchesExhaustiveOptimum) {
  int instances_with_choice = 0;
  for (std::uint32_t seed = 1; seed <= 12; ++seed) {
    Instance in = random_instance(seed);
    const double opt = exhaustive_total_jct(in);
    SimResult r = run(instance_cluster(in), in.profiles, in.work, 1.0);
    double total = 0.0;
    for (const auto& j : r.jobs) {
      ASSERT_FALSE(std::isnan(j.finish)) << j.id;
      total += j.finish - j.arrival;
    }
    const double n = static_cast<double>(in.p.size());
    EXPECT_NEAR(total / n, opt / n, 1e-6) << "seed " << seed;
    // The instance is not trivial: running every job on its faster type in
    // arrival order would be worse.
    instances_with_choice += total < [&] {
      std::vector<double> clock;
      for (int t = 0; t < 2; ++t) clock.insert(clock.end(), in.gpus[std::size_t(t)], 0.0);
      double sum = 0.0;
      for (const auto& p : in.p) {
        auto g = std::min_element(clock.begin(), clock.end());
        sum += *g += std::min(p[0], p[1]);
      }
      return sum;
    }() - 1e-6;
  }
  EXPECT_GE(instances_with_choice, 6);
}

TEST(Allox, HandDerivedBatchSharesTheFastGpu) {
  // One slow and one fast GPU. L: 120 it, 1 it/s slow, 4 it/s fast (120 s /
  // 30 s); S1, S2: 60 it, 1 it/s on both (60 s each). Schedules: fast [L, S]
  // + slow [S]: 30 + 90 + 60 = 180; fast [L] + slow [S, S]: 30 + 60 + 120 =
  // 210; L on slow: >= 120 + 60 + 120. The optimum starts L on fast and one S
  // on slow at 0, the other S on fast at 30.
  ProfileCatalogue c;
  c.source = "hand";
  JobTypeProfile l, s;
  l.name = "l";
  l.consolidated["slow"][1] = 1;
  l.consolidated["fast"][1] = 4;
  s.name = "s";
  s.consolidated["slow"][1] = 1;
  s.consolidated["fast"][1] = 1;
  c.job_types = {l, s};
  Workload w = workload({job("L", "a", "l", 1, 0, 120), job("S1", "b", "s", 1, 0, 60),
                         job("S2", "c", "s", 1, 0, 60)});
  SimResult r = run(toy_cluster({{"slow", 1}, {"fast", 1}}), c, w, 1.0);
  // Positions from the end: fast queue [L (k=2), S (k=1)] costs 2x30 + 60,
  // slow queue [S (k=1)] 60: total 180, the minimum (L on slow costs >= 120).
  EXPECT_DOUBLE_EQ(rec(r, "L").first_start, 0.0);
  EXPECT_NEAR(rec(r, "L").finish, 30.0, 1e-9);
  EXPECT_NEAR(rec(r, "S1").finish + rec(r, "S2").finish, 60.0 + 90.0, 1e-9);
  EXPECT_EQ(rec(r, "L").cross_type_placements, 0);
}

// ---- fairness knob ---------------------------------------------------------

ProfileCatalogue linear_profile() {
  ProfileCatalogue c;
  c.source = "linear";
  JobTypeProfile t;
  t.name = "lin";
  for (int g : {1, 2}) t.consolidated["slow"][g] = g;
  c.job_types = {t};
  return c;
}

Cluster slow_cluster(std::vector<int> nodes) {
  std::vector<std::pair<std::string, int>> n;
  for (int g : nodes) n.emplace_back("slow", g);
  Cluster c = toy_cluster(n);
  c.gpu_types = {"slow"};
  return c;
}

TEST(Allox, AlphaStartsTheLowestProgressTenantFirst) {
  // Two GPUs, 1 it/s. Tenant A: A1 (1000 s) at 0, A2 (5 s) at 1; tenant B:
  // B1 (10 s) at 0, B2 (50 s) at 1.
  Workload w = workload({job("A1", "A", "lin", 1, 0, 1000), job("B1", "B", "lin", 1, 0, 10),
                         job("A2", "A", "lin", 1, 1, 5), job("B2", "B", "lin", 1, 1, 50)});
  // α = 1: pure JCT. t=0 A1 and B1 start; t=10 B1 ends and the free GPU's
  // queue is [A2, B2] (5 x 2 + 50 < 50 x 2 + 5): A2 starts, then B2 at 15.
  SimResult pure = run(slow_cluster({2}), linear_profile(), w, 1.0);
  EXPECT_DOUBLE_EQ(rec(pure, "A1").first_start, 0.0);
  EXPECT_DOUBLE_EQ(rec(pure, "B1").first_start, 0.0);
  EXPECT_DOUBLE_EQ(rec(pure, "A2").first_start, 10.0);
  EXPECT_DOUBLE_EQ(rec(pure, "B2").first_start, 15.0);
  // α = 0.5: ceil(0.5 x 2) = 1 tenant. t=0: both at progress 0, A by index:
  // only A1 is matched and starts, one GPU stays idle. t=1: A's progress is
  // 1/2 (one of 2 GPUs on its best type), B's 0: B1 starts (shorter than
  // B2). t=11: still A 1/2, B 0: B2 starts although A2 is shorter; A2 runs
  // when B2 ends at 61.
  SimResult fair = run(slow_cluster({2}), linear_profile(), w, 0.5);
  EXPECT_DOUBLE_EQ(rec(fair, "A1").first_start, 0.0);
  EXPECT_DOUBLE_EQ(rec(fair, "B1").first_start, 1.0);
  EXPECT_DOUBLE_EQ(rec(fair, "B2").first_start, 11.0);
  EXPECT_DOUBLE_EQ(rec(fair, "A2").first_start, 61.0);
}

// ---- gangs -----------------------------------------------------------------

TEST(Allox, GangStartsAllOrNothing) {
  // One node of 2 GPUs. G: 2 workers, 20 it at 2 it/s = 10 s; U1 30 s, U2 5 s.
  // t=0, 4 units on the free group (levels 1-2 of 2 slots), unit costs
  // (k-1) p + p/g: G 5 | 15, U1 30 | 60, U2 5 | 10. Best: U1 and a G unit at
  // level 1, U2 and the other G unit at level 2 (30 + 5 + 10 + 15 = 60). The
  // fronts are the level-2 units: U2 starts; G has one front of two and
  // waits, its front GPU idle. t=1..4 (free slot + U2's, offset 5 - t): U1
  // on the free slot at level 1, G behind U2 and on top of U1: the front is
  // G's, still one of two. t=5: both free, G (p 10) is at the front of both
  // slots, U1 behind it: G runs 5-15, U1 15-45.
  Workload w = workload({job("G", "A", "lin", 2, 0, 20), job("U1", "B", "lin", 1, 0, 30),
                         job("U2", "C", "lin", 1, 0, 5)});
  SimResult r = run(slow_cluster({2}), linear_profile(), w, 1.0);
  EXPECT_DOUBLE_EQ(rec(r, "U2").first_start, 0.0);
  EXPECT_DOUBLE_EQ(rec(r, "G").first_start, 5.0);
  EXPECT_NEAR(rec(r, "G").finish, 15.0, 1e-9);
  EXPECT_DOUBLE_EQ(rec(r, "U1").first_start, 15.0);
  EXPECT_NEAR(rec(r, "U1").finish, 45.0, 1e-9);
  EXPECT_NEAR(rec(r, "G").attained_gpu_seconds, 20.0, 1e-9);  // both GPUs, 10 s
}

TEST(Allox, NonPreemptive) {
  // A long job started alone is never preempted by shorter later ones; the
  // queue behind it is shortest first (s2 10 s, then s1 20 s).
  Workload w = workload({job("long", "A", "lin", 1, 0, 500), job("s1", "B", "lin", 1, 5, 20),
                         job("s2", "B", "lin", 1, 6, 10)});
  SimResult r = run(slow_cluster({1}), linear_profile(), w, 1.0);
  EXPECT_EQ(rec(r, "long").preemptions, 0);
  EXPECT_NEAR(rec(r, "long").finish, 500.0, 1e-9);
  EXPECT_DOUBLE_EQ(rec(r, "s2").first_start, 500.0);
  EXPECT_DOUBLE_EQ(rec(r, "s1").first_start, 510.0);
}

}  // namespace
}  // namespace fairgpu
