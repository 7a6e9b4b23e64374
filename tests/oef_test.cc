// OEF (non-cooperative, cooperative, weighted, job types) and Gavel on the OEF
// paper's worked examples and on random instances against the full LPs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "fairgpu/audit.h"
#include "fairgpu/policy.h"
#include "reference_lp.h"
#include "test_instances.h"

namespace fairgpu {
namespace {

ShareProblem two_types(std::vector<std::vector<double>> w, std::vector<double> weights = {},
                       std::vector<double> demands = {}) {
  ShareProblem p;
  p.gpu_types = {"gpu1", "gpu2"};
  p.capacity = {1, 1};
  for (std::size_t l = 0; l < w.size(); ++l)
    p.add_tenant(std::string("u").append(std::to_string(l + 1)), w[l],
                 weights.empty() ? 1.0 : weights[l], demands.empty() ? kNoDemand : demands[l]);
  return p;
}

Matrix run(const char* policy, const ShareProblem& p) {
  auto pol = make_share_policy(policy);
  EXPECT_NE(pol, nullptr) << policy;
  Matrix x = pol->allocate(p);
  EXPECT_EQ(check_feasible(p, x, 1e-7), "") << policy;
  return x;
}

void expect_matrix(const Matrix& x, std::vector<std::vector<double>> want, double tol) {
  ASSERT_EQ(x.rows(), want.size());
  for (std::size_t r = 0; r < want.size(); ++r)
    for (std::size_t c = 0; c < want[r].size(); ++c)
      EXPECT_NEAR(x(r, c), want[r][c], tol) << "row " << r << " col " << c;
}

// ---- Worked examples (OEF §2.4, §3.1.1, §4.2.3, §4.2.4) -------------------

// Eq. 2: W = [[1,2],[1,3],[1,4]] -> X* = [[1,0],[0,.5],[0,.5]], E = [1, 1.5, 2].
// u1 must not envy u2 or u3: 1 >= 2 x_2^2 caps the fast shares at 0.5.
TEST(OefCoop, ThreeUsersPaperExample) {
  ShareProblem p = two_types({{1, 2}, {1, 3}, {1, 4}});
  Matrix x = run("oef-coop", p);
  expect_matrix(x, {{1, 0}, {0, 0.5}, {0, 0.5}}, 1e-6);
  EXPECT_NEAR(p.throughput(0, x), 1.0, 1e-6);
  EXPECT_NEAR(p.throughput(1, x), 1.5, 1e-6);
  EXPECT_NEAR(p.throughput(2, x), 2.0, 1e-6);
}

// Eq. 6: W = [[1,2],[1,5]] -> X = [[1,0.25],[0,0.75]], total 5.25.
TEST(OefCoop, TwoUsersPaperExample) {
  ShareProblem p = two_types({{1, 2}, {1, 5}});
  Matrix x = run("oef-coop", p);
  expect_matrix(x, {{1, 0.25}, {0, 0.75}}, 1e-6);
  EXPECT_NEAR(p.total_throughput(x), 5.25, 1e-6);
}

// §3.1.2: the first user lying [1,3] instead of [1,2] against [1,4] moves the
// cooperative allocation from [[1,.25],[0,.75]] to [[1,1/3],[0,2/3]].
TEST(OefCoop, LyingChangesTheCooperativeAllocation) {
  expect_matrix(run("oef-coop", two_types({{1, 2}, {1, 4}})), {{1, 0.25}, {0, 0.75}}, 1e-6);
  expect_matrix(run("oef-coop", two_types({{1, 3}, {1, 4}})), {{1, 1.0 / 3}, {0, 2.0 / 3}}, 1e-6);
}

// §4.2.3: W = [[1,2],[1,5]], pi_2 = 2, non-cooperative -> u1 [1, 1/3], u2 [0, 2/3]
// (both replicas of u2 get [0, 1/3]); every replica's throughput is 5/3.
TEST(OefNonCoop, WeightedPaperExample) {
  ShareProblem p = two_types({{1, 2}, {1, 5}}, {1, 2});
  Matrix x = run("oef-noncoop", p);
  expect_matrix(x, {{1, 1.0 / 3}, {0, 2.0 / 3}}, 1e-6);
  EXPECT_NEAR(p.throughput(0, x), 5.0 / 3, 1e-6);
  EXPECT_NEAR(p.throughput(1, x), 10.0 / 3, 1e-6);
}

// Non-integer weights act like replication: weight 1.5 vs 1 on W = [[1,2],[1,5]]
// gives u2 exactly 1.5 times u1's throughput, and the result equals integer
// weights 2 vs 3 (scaling every weight changes nothing).
TEST(OefNonCoop, NonIntegerWeights) {
  ShareProblem a = two_types({{1, 2}, {1, 5}}, {1, 1.5});
  ShareProblem b = two_types({{1, 2}, {1, 5}}, {2, 3});
  Matrix xa = run("oef-noncoop", a), xb = run("oef-noncoop", b);
  EXPECT_NEAR(a.throughput(1, xa), 1.5 * a.throughput(0, xa), 1e-6);
  for (std::size_t e = 0; e < 2; ++e)
    for (std::size_t j = 0; j < 2; ++j) EXPECT_NEAR(xa(e, j), xb(e, j), 1e-6);
  // u1: 1 + 2y = t, u2: 5(1 - y) = 1.5 t  ->  y = 7/16, t = 15/8.
  EXPECT_NEAR(a.throughput(0, xa), 15.0 / 8, 1e-6);
}

// §4.2.4: user 1 runs [1,2] and [1,3], user 2 runs [1,5], equal weights,
// non-cooperative -> [1, 4/37], [0, 15/37] and user 2 [0, 18/37] (≈ .11, .41,
// .49). Each of user 1's job types (weight 1/2) reaches 45/37, user 2 (weight
// 1) twice that: equal normalised throughput per unit of weight.
TEST(OefNonCoop, JobTypesPaperExample) {
  ShareProblem p;
  p.gpu_types = {"gpu1", "gpu2"};
  p.capacity = {1, 1};
  p.add_tenant_job_types("u1", {{"a", {1, 2}}, {"b", {1, 3}}});
  p.add_tenant("u2", {1, 5});
  Matrix x = run("oef-noncoop", p);
  expect_matrix(x, {{1, 4.0 / 37}, {0, 15.0 / 37}, {0, 18.0 / 37}}, 1e-6);
  EXPECT_NEAR(x(0, 1), 0.11, 0.005);
  EXPECT_NEAR(x(1, 1), 0.41, 0.005);
  EXPECT_NEAR(x(2, 1), 0.49, 0.005);
  EXPECT_NEAR(p.throughput(0, x), 45.0 / 37, 1e-6);
  EXPECT_NEAR(p.throughput(1, x), 45.0 / 37, 1e-6);
  EXPECT_NEAR(p.throughput(2, x), 90.0 / 37, 1e-6);
}

// OEF §2.4 eq. 3 with demand 1 per user: throughputs 12/11, 16/11, 20/11, all
// 12/11 of the equal-split throughput [1, 4/3, 5/3].
TEST(Gavel, ThreeUsersPaperExample) {
  ShareProblem p = two_types({{1, 2}, {1, 3}, {1, 4}}, {}, {1, 1, 1});
  Matrix x = run("gavel", p);
  EXPECT_NEAR(p.throughput(0, x), 12.0 / 11, 1e-6);
  EXPECT_NEAR(p.throughput(1, x), 16.0 / 11, 1e-6);
  EXPECT_NEAR(p.throughput(2, x), 20.0 / 11, 1e-6);
  expect_matrix(x, {{10.0 / 11, 1.0 / 11}, {1.0 / 11, 5.0 / 11}, {0, 5.0 / 11}}, 1e-6);
}

// Without demands the first user may exceed one device: (t-1)/2 + 4t/9 + 5t/12 = 1
// -> t = 54/49 for everybody.
TEST(Gavel, WithoutDemands) {
  ShareProblem p = two_types({{1, 2}, {1, 3}, {1, 4}});
  Matrix x = run("gavel", p);
  EXPECT_NEAR(p.throughput(0, x), 54.0 / 49, 1e-6);
  EXPECT_NEAR(p.throughput(1, x), 54.0 / 49 * 4 / 3, 1e-6);
  EXPECT_NEAR(p.throughput(2, x), 54.0 / 49 * 5 / 3, 1e-6);
}

// ---- Demands: progressive filling ----------------------------------------

// Four GPUs of one type; u1 can use one. Everyone rises to 1, u1 stops, the
// others share the remaining three: no capped tenant drags the rest down.
TEST(Demands, ProgressiveFillingOneType) {
  ShareProblem p;
  p.gpu_types = {"v100"};
  p.capacity = {4};
  p.add_tenant("small", {1}, 1, 1);
  p.add_tenant("b", {1});
  p.add_tenant("c", {1});
  for (const char* policy : {"oef-noncoop", "oef-coop", "gavel"}) {
    Matrix x = run(policy, p);
    EXPECT_NEAR(x(0, 0), 1.0, 1e-6) << policy;
    EXPECT_NEAR(x(1, 0), 1.5, 1e-6) << policy;
    EXPECT_NEAR(x(2, 0), 1.5, 1e-6) << policy;
  }
}

// A capped tenant under oef-coop: u1 (demand 1) on m = [2, 2] must not make
// the others' fast share as small as its own single device.
TEST(Demands, CoopCappedTenantDoesNotDragOthersDown) {
  ShareProblem p;
  p.gpu_types = {"slow", "fast"};
  p.capacity = {2, 2};
  p.add_tenant("small", {1, 2}, 1, 1);
  p.add_tenant("b", {1, 3});
  p.add_tenant("c", {1, 4});
  Matrix x = run("oef-coop", p);
  // small holds at most one device and gets at least its capped equal share
  // V([2/3, 2/3]) = 2*(2/3) + 1*(1/3) = 5/3.
  EXPECT_LE(x(0, 0) + x(0, 1), 1 + 1e-6);
  EXPECT_GE(p.throughput(0, x), 5.0 / 3 - 1e-6);
  // All capacity is used by the others.
  EXPECT_NEAR(x(0, 0) + x(1, 0) + x(2, 0), 2, 1e-6);
  EXPECT_NEAR(x(0, 1) + x(1, 1) + x(2, 1), 2, 1e-6);
  // Capped envy: small's best single device of anyone's bundle is worth at most 2.
  double best = 0;
  for (std::size_t i = 1; i < 3; ++i) best = std::max(best, p.capped_value(0, x.row(i), 1));
  EXPECT_LE(best, p.throughput(0, x) + 1e-6);
}

// ---- Random instances against the full LPs ---------------------------------

struct RandomCase {
  std::uint32_t seed;
  std::size_t n, k;
  bool weights;
};

class OefRandom : public ::testing::TestWithParam<RandomCase> {};

TEST_P(OefRandom, CoopMatchesFullLpAndIsEnvyFreeAndSharingIncentive) {
  auto c = GetParam();
  ShareProblem p = testing::random_problem(c.seed, c.n, c.k, c.weights);
  Matrix x = run("oef-coop", p);
  double want = reference::full_coop_total(p);
  EXPECT_NEAR(p.total_throughput(x), want, 1e-6 * want);
  double total_weight = p.total_weight();
  for (std::size_t l = 0; l < p.num_entities(); ++l) {
    double own = p.throughput(l, x) / p.entities[l].weight;
    for (std::size_t i = 0; i < p.num_entities(); ++i)
      // l's value of i's bundle per unit of i's weight: W_l . x_i / pi_i.
      EXPECT_LE(p.value(l, x.row(i)) / p.entities[i].weight, own * (1 + 1e-6))
          << "u" << l << " envies u" << i;
    double si = p.value(l, p.capacity.data()) * p.entities[l].weight / total_weight;
    EXPECT_GE(p.throughput(l, x), si * (1 - 1e-6)) << "u" << l << " below its equal share";
  }
}

TEST_P(OefRandom, NonCoopMatchesFullLpWithEqualThroughputs) {
  auto c = GetParam();
  ShareProblem p = testing::random_problem(c.seed, c.n, c.k, c.weights);
  Matrix x = run("oef-noncoop", p);
  double want = reference::full_noncoop_total(p);
  EXPECT_NEAR(p.total_throughput(x), want, 1e-6 * want);
  double t = p.throughput(0, x) / p.entities[0].weight;
  for (std::size_t l = 1; l < p.num_entities(); ++l)
    EXPECT_NEAR(p.throughput(l, x) / p.entities[l].weight, t, 1e-6 * t);
}

INSTANTIATE_TEST_SUITE_P(Seeds, OefRandom,
                         ::testing::Values(RandomCase{1, 2, 2, false}, RandomCase{2, 5, 3, false},
                                           RandomCase{3, 10, 4, true}, RandomCase{4, 20, 6, false},
                                           RandomCase{5, 30, 5, true}, RandomCase{6, 50, 6, false},
                                           RandomCase{7, 50, 2, true}, RandomCase{8, 40, 6, true}));

// Theorem 5.4 on random instances: no inflation of one tenant's speedups on
// the probe's grid (x1.1 .. x3, all faster types or one) raises its true
// throughput under oef-noncoop. The same probe catches max-sum-throughput.
// (The probe re-solves n * 5 * k times, so these stay at n <= 30.)
TEST(OefNonCoop, StrategyProofnessProbeFindsNoGainOnRandomInstances) {
  for (RandomCase c : {RandomCase{31, 2, 2, false}, RandomCase{32, 8, 3, true},
                       RandomCase{33, 20, 6, false}, RandomCase{34, 30, 4, true}}) {
    ShareProblem p = testing::random_problem(c.seed, c.n, c.k, c.weights);
    auto policy = make_share_policy("oef-noncoop");
    AuditReport r = audit_allocation(p, policy->allocate(p), policy.get());
    ASSERT_TRUE(r.sp_probed);
    EXPECT_LE(r.sp_max_gain, 1e-6) << "seed " << c.seed << ": " << r.sp_best_lie;
    EXPECT_TRUE(r.strategy_proof);
    auto greedy = make_share_policy("max-sum-throughput");
    AuditReport g = audit_allocation(p, greedy->allocate(p), greedy.get());
    EXPECT_FALSE(g.strategy_proof) << "seed " << c.seed << ": the probe should catch max-sum";
  }
}

// Groups of identical tenants (Gavel-like instances) give the same total as
// the full LP and split each group's bundle by weight.
TEST(OefCoop, IdenticalTenantsMatchFullLp) {
  ShareProblem base = testing::random_problem(11, 6, 3);
  ShareProblem p;
  p.gpu_types = base.gpu_types;
  p.capacity = base.capacity;
  for (int copy = 0; copy < 5; ++copy)
    for (std::size_t e = 0; e < base.num_entities(); ++e)
      p.add_tenant(
          std::string("c").append(std::to_string(copy)).append("_").append(std::to_string(e)),
          base.entities[e].speedup, 1.0 + copy % 2);
  Matrix x = run("oef-coop", p);
  double want = reference::full_coop_total(p);
  EXPECT_NEAR(p.total_throughput(x), want, 1e-6 * want);
  // Copies 0 (weight 1) and 1 (weight 2) of the same vector: 1:2 bundles.
  for (std::size_t j = 0; j < p.num_types(); ++j) EXPECT_NEAR(2 * x(0, j), x(6, j), 1e-9);
}

// A round policy's oef-coop remembers the envy rows that bound its recent
// solves and starts the next solve from them. Over a sequence of related
// problems (tenants leave and arrive, weights and capacity change, a pool of
// 10 speedup vectors so entities group), every remembered solve must still
// reach the full LP's optimum and be envy-free.
TEST(OefCoop, RememberedSolvesStayOptimalAcrossChangingProblems) {
  ShareProblem pool = testing::random_problem(21, 10, 3);
  auto remembering = make_share_policy("oef-coop");
  remembering->remember_between_solves();
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::size_t> pick(0, pool.num_entities() - 1);
  std::uniform_int_distribution<int> weight(1, 3), tenants(8, 24), grow(0, 4);
  for (int step = 0; step < 25; ++step) {
    // Sequences of five (each solve starts from the basis of the same step
    // of the last sequence, or of the solve before).
    if (step % 5 == 0) remembering->begin_solve_sequence();
    ShareProblem p;
    p.gpu_types = pool.gpu_types;
    p.capacity = pool.capacity;
    for (double& m : p.capacity) m += grow(rng);
    const int n = tenants(rng);
    for (int t = 0; t < n; ++t)
      p.add_tenant("t" + std::to_string(t), pool.entities[pick(rng)].speedup, weight(rng));
    const Matrix x = remembering->allocate(p);
    ASSERT_EQ(check_feasible(p, x, 1e-7), "") << "step " << step;
    const double want = reference::full_coop_total(p);
    EXPECT_NEAR(p.total_throughput(x), want, 1e-6 * want) << "step " << step;
    for (std::size_t l = 0; l < p.num_entities(); ++l) {
      const double own = p.throughput(l, x) / p.entities[l].weight;
      for (std::size_t i = 0; i < p.num_entities(); ++i)
        EXPECT_LE(p.value(l, x.row(i)) / p.entities[i].weight, own * (1 + 1e-6))
            << "step " << step << ": t" << l << " envies t" << i;
    }
  }
}

// Demands on random instances: feasibility, capped sharing incentive and
// capped envy-freeness hold for oef-coop; oef-noncoop and gavel respect caps.
TEST(Demands, RandomInstancesRespectCapsAndFairness) {
  for (std::uint32_t seed = 20; seed < 26; ++seed) {
    ShareProblem p = testing::random_problem(seed, 12, 3, seed % 2 == 0, 0.4);
    for (const char* policy : {"oef-noncoop", "oef-coop", "gavel"}) run(policy, p);
    Matrix x = run("oef-coop", p);
    double tw = p.total_weight();
    for (std::size_t l = 0; l < p.num_entities(); ++l) {
      double cap = p.entity_demand(l);
      std::vector<double> share(p.num_types()), y(p.num_types());
      for (std::size_t j = 0; j < p.num_types(); ++j)
        share[j] = p.capacity[j] * p.entities[l].weight / tw;
      EXPECT_GE(p.throughput(l, x), p.capped_value(l, share.data(), cap) * (1 - 1e-6));
      for (std::size_t i = 0; i < p.num_entities(); ++i) {
        for (std::size_t j = 0; j < p.num_types(); ++j)
          y[j] = x(i, j) * p.entities[l].weight / p.entities[i].weight;
        EXPECT_LE(p.capped_value(l, y.data(), cap), p.throughput(l, x) * (1 + 1e-6) + 1e-9)
            << "seed " << seed << ": u" << l << " envies u" << i;
      }
    }
  }
}

}  // namespace
}  // namespace fairgpu
