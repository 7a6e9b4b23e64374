// Property audit (src/fairness/audit.cc) on hand-built allocations whose
// properties are known in closed form, most of them from OEF §2.4, plus the
// strategy-proofness probe run against the registered policies.
#include "fairgpu/audit.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fairgpu/policy.h"
#include "fairgpu/share_problem.h"

namespace fairgpu {
namespace {

constexpr double kEps = 1e-9;

Matrix matrix(std::initializer_list<std::initializer_list<double>> rows) {
  Matrix m(rows.size(), rows.begin()->size());
  std::size_t r = 0;
  for (const auto& row : rows) {
    std::size_t c = 0;
    for (double v : row) m(r, c++) = v;
    ++r;
  }
  return m;
}

// OEF eq. (1): three users on one GPU1 and one GPU2, speedups 2, 3 and 4.
ShareProblem oef_three_users() {
  ShareProblem p;
  p.gpu_types = {"gpu1", "gpu2"};
  p.capacity = {1, 1};
  p.add_tenant("u1", {1, 2});
  p.add_tenant("u2", {1, 3});
  p.add_tenant("u3", {1, 4});
  return p;
}

AuditOptions no_probe() {
  AuditOptions o;
  o.strategy_proofness_probe = false;
  return o;
}

// A registered policy by name (throws for an unknown name).
std::unique_ptr<SharePolicy> policy_named(std::string_view name) {
  std::unique_ptr<SharePolicy> policy = make_share_policy(name);
  if (!policy) throw std::runtime_error("no policy named " + std::string(name));
  return policy;
}

// OEF eq. (2), X* = [[1,0],[0,.5],[0,.5]], E* = (1, 1.5, 2), total 4.5.
//  EF: u1 values u2's and u3's bundles at 2 * 0.5 = 1 = its own; u2 values
//      u3's at 1.5 = its own; u3 values u2's at 2 = its own -> max ratio 1.
//  SI: references W_l . m/3 = 1, 4/3, 5/3 -> ratios 1, 1.125, 1.2 (min u1).
//  PE: u1 holds all of GPU1 and nothing else; GPU2 is split so that u2 is at
//      its floor -> no improvement.
//  Efficiency: max-sum gives GPU1 to u1 or u2 and GPU2 to u3: 1 + 4 = 5,
//      gap 1 - 4.5 / 5 = 0.1.
TEST(AuditPaper, OefCooperativeAllocationIsEfSiPe) {
  ShareProblem p = oef_three_users();
  AuditReport r = audit_allocation(p, matrix({{1, 0}, {0, 0.5}, {0, 0.5}}), nullptr);
  EXPECT_NEAR(r.max_envy_ratio, 1.0, kEps);
  EXPECT_TRUE(r.envy_free);
  EXPECT_EQ(r.envy_pair, "");
  EXPECT_NEAR(r.min_sharing_incentive_ratio, 1.0, kEps);
  EXPECT_EQ(r.sharing_incentive_worst, "u1");
  EXPECT_TRUE(r.sharing_incentive);
  EXPECT_NEAR(r.pareto_improvement, 0.0, kEps);
  EXPECT_TRUE(r.pareto_efficient);
  EXPECT_NEAR(r.total_throughput, 4.5, kEps);
  EXPECT_NEAR(r.max_total_throughput, 5.0, kEps);
  EXPECT_NEAR(r.efficiency_gap, 0.1, kEps);
  EXPECT_FALSE(r.optimal_efficiency);
  EXPECT_FALSE(r.sp_probed);
}

// Gandiva_fair's allocation (OEF eq. 1, exact fractions 4/45, 7/15, 4/9):
// throughputs 53/45, 7/5, 16/9.
//  EF: u3 values u2's bundle at 4 * 7/15 = 28/15 against 16/9 -> 1.05.
//  SI: ratios (53/45)/1, (7/5)/(4/3) = 1.05, (16/9)/(5/3) = 16/15 -> min u2.
//  PE: u1 holds all of GPU1; any GPU2 it gave up could not be compensated.
TEST(AuditPaper, GandivaFairAllocationEnviesButIsPe) {
  ShareProblem p = oef_three_users();
  AuditReport r =
      audit_allocation(p, matrix({{1, 4.0 / 45}, {0, 7.0 / 15}, {0, 4.0 / 9}}), nullptr);
  EXPECT_NEAR(r.max_envy_ratio, 1.05, kEps);
  EXPECT_FALSE(r.envy_free);
  EXPECT_EQ(r.envy_pair, "u3 envies u2");
  EXPECT_NEAR(r.min_sharing_incentive_ratio, 1.05, kEps);
  EXPECT_EQ(r.sharing_incentive_worst, "u2");
  EXPECT_TRUE(r.sharing_incentive);
  EXPECT_NEAR(r.pareto_improvement, 0.0, kEps);
  EXPECT_TRUE(r.pareto_efficient);
  const double total = 53.0 / 45 + 7.0 / 5 + 16.0 / 9;
  EXPECT_NEAR(r.total_throughput, total, kEps);
  EXPECT_NEAR(r.efficiency_gap, 1 - total / 5, kEps);
}

// Gavel's allocation (OEF eq. 3, exact fractions of 11): throughputs 12/11,
// 16/11, 20/11 — each 12/11 of its equal-split value (1, 4/3, 5/3).
//  EF: u3 values u2's bundle at 1/11 + 4 * 5/11 = 21/11 against 20/11.
//  PE: no. Best improvement keeps u1 = [1, d1] at 12/11 (d1 = 1/22), u2 = [0, d2]
//      at 16/11 (d2 = 16/33) and gives u3 the rest, d3 = 31/66, worth 62/33:
//      total 146/33 against 144/33 -> improvement 1/72.
//  Efficiency: 1 - (48/11) / 5 = 7/55.
TEST(AuditPaper, GavelAllocationEnviesAndIsNotPe) {
  ShareProblem p = oef_three_users();
  AuditReport r = audit_allocation(
      p, matrix({{10.0 / 11, 1.0 / 11}, {1.0 / 11, 5.0 / 11}, {0, 5.0 / 11}}), nullptr);
  EXPECT_NEAR(r.max_envy_ratio, 21.0 / 20, kEps);
  EXPECT_EQ(r.envy_pair, "u3 envies u2");
  EXPECT_FALSE(r.envy_free);
  EXPECT_NEAR(r.min_sharing_incentive_ratio, 12.0 / 11, kEps);
  EXPECT_TRUE(r.sharing_incentive);
  EXPECT_NEAR(r.pareto_improvement, 1.0 / 72, 1e-7);
  EXPECT_FALSE(r.pareto_efficient);
  EXPECT_NEAR(r.total_throughput, 48.0 / 11, kEps);
  EXPECT_NEAR(r.efficiency_gap, 7.0 / 55, kEps);
  EXPECT_FALSE(r.optimal_efficiency);
}

// The equal split m/3: every entity gets exactly its SI reference and values
// every other bundle as its own. Not PE: with floors 1, 4/3, 5/3, u1 takes
// GPU1 (1), u2 4/9 of GPU2 (4/3), u3 5/9 (20/9): total 41/9 against 4 -> 5/36.
TEST(AuditShares, EqualSplitIsExactlySiAndEfButNotPe) {
  ShareProblem p = oef_three_users();
  const double t = 1.0 / 3;
  AuditReport r = audit_allocation(p, matrix({{t, t}, {t, t}, {t, t}}), nullptr, no_probe());
  EXPECT_NEAR(r.min_sharing_incentive_ratio, 1.0, kEps);
  EXPECT_TRUE(r.sharing_incentive);
  EXPECT_NEAR(r.max_envy_ratio, 1.0, kEps);
  EXPECT_TRUE(r.envy_free);
  EXPECT_NEAR(r.total_throughput, 4.0, kEps);
  EXPECT_NEAR(r.pareto_improvement, 5.0 / 36, 1e-7);
  EXPECT_FALSE(r.pareto_efficient);
}

// Weights 1 and 2: the SI reference of an entity is m * w_l / sum w, and the
// envy comparison scales the other bundle by w_l / w_i.
//  [m/3, 2m/3]: SI ratios 1 and 1; u1 sees u2's bundle halved = its own.
//  [m/2, m/2]:  u2 has 3 against a reference of (2/3)(1 + 5) = 4 -> 0.75;
//               u2 sees u1's bundle doubled, [1, 1], worth 6 against 3 -> 2.
TEST(AuditShares, WeightsScaleSharesAndEnvy) {
  ShareProblem p;
  p.gpu_types = {"gpu1", "gpu2"};
  p.capacity = {1, 1};
  p.add_tenant("u1", {1, 2}, 1.0);
  p.add_tenant("u2", {1, 5}, 2.0);

  const double a = 1.0 / 3, b = 2.0 / 3;
  AuditReport fair = audit_allocation(p, matrix({{a, a}, {b, b}}), nullptr);
  EXPECT_NEAR(fair.min_sharing_incentive_ratio, 1.0, kEps);
  EXPECT_TRUE(fair.sharing_incentive);
  EXPECT_NEAR(fair.max_envy_ratio, 1.0, kEps);
  EXPECT_TRUE(fair.envy_free);

  AuditReport half = audit_allocation(p, matrix({{0.5, 0.5}, {0.5, 0.5}}), nullptr);
  EXPECT_NEAR(half.min_sharing_incentive_ratio, 0.75, kEps);
  EXPECT_EQ(half.sharing_incentive_worst, "u2");
  EXPECT_FALSE(half.sharing_incentive);
  EXPECT_NEAR(half.max_envy_ratio, 2.0, kEps);
  EXPECT_EQ(half.envy_pair, "u2 envies u1");
  EXPECT_FALSE(half.envy_free);
}

// alice can use one device (demand 1), bob any number; m = [2, 2].
// alice = [0, 1] (3), bob = [2, 1] (4).
//  SI: alice's equal share [1, 1] is worth its best single device, 3, not 4
//      -> ratio 1 (0.75 if the cap were ignored); bob 4 / 3.
//  EF: alice values bob's [2, 1] at its best device, 3 -> ratio 1 (5/3
//      uncapped); bob values alice's [0, 1] at 2 / 4.
//  PE and optimal: GPU2 is worth 3 to alice, 2 to bob, but alice takes one.
TEST(AuditShares, DemandCapLimitsValueOfABundle) {
  ShareProblem p;
  p.gpu_types = {"k80", "v100"};
  p.capacity = {2, 2};
  p.add_tenant("alice", {1, 3}, 1.0, /*demand=*/1.0);
  p.add_tenant("bob", {1, 2});
  AuditReport r = audit_allocation(p, matrix({{0, 1}, {2, 1}}), nullptr);
  EXPECT_NEAR(r.min_sharing_incentive_ratio, 1.0, kEps);
  EXPECT_EQ(r.sharing_incentive_worst, "alice");
  EXPECT_TRUE(r.sharing_incentive);
  EXPECT_NEAR(r.max_envy_ratio, 1.0, kEps);
  EXPECT_TRUE(r.envy_free);
  EXPECT_NEAR(r.total_throughput, 7.0, kEps);
  EXPECT_NEAR(r.max_total_throughput, 7.0, kEps);
  EXPECT_TRUE(r.pareto_efficient);
  EXPECT_TRUE(r.optimal_efficiency);
}

// u1 holds GPU1, u2 nothing, GPU2 idle: u2 envies without bound, has SI ratio
// 0, and can take GPU2 (worth 3) at nobody's cost: improvement (4 - 1) / 1.
TEST(AuditShares, EntityWithNothingCountsEverywhere) {
  ShareProblem p;
  p.gpu_types = {"gpu1", "gpu2"};
  p.capacity = {1, 1};
  p.add_tenant("u1", {1, 2});
  p.add_tenant("u2", {1, 3});
  AuditReport r = audit_allocation(p, matrix({{1, 0}, {0, 0}}), nullptr);
  EXPECT_EQ(r.max_envy_ratio, std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.envy_pair, "u2 envies u1");
  EXPECT_NEAR(r.min_sharing_incentive_ratio, 0.0, kEps);
  EXPECT_EQ(r.sharing_incentive_worst, "u2");
  EXPECT_NEAR(r.pareto_improvement, 3.0, 1e-7);
  EXPECT_FALSE(r.pareto_efficient);
  EXPECT_NEAR(r.efficiency_gap, 1 - 1.0 / 4, kEps);
}

// Job types are virtual tenants with half the weight each (OEF §4.2.4), and
// envy is checked between entities of one tenant too. bob/a [1,2] = [.5, 0],
// bob/b [1,4] = [0, .5], carol [1,1] = [.5, .5].
//  bob/a: own 0.5; bob/b's bundle is worth 1 -> 2 (the worst pair); carol's,
//         halved for the weights (1/2 against 1), [.25, .25] -> 0.75 / 0.5.
//  carol: own 1; either bob bundle doubled is worth 1 -> 1.
TEST(AuditShares, EntitiesOfOneTenantAreCompared) {
  ShareProblem p;
  p.gpu_types = {"gpu1", "gpu2"};
  p.capacity = {1, 1};
  p.add_tenant_job_types("bob", {{"a", {1, 2}}, {"b", {1, 4}}});
  p.add_tenant("carol", {1, 1});
  AuditReport r = audit_allocation(p, matrix({{0.5, 0}, {0, 0.5}, {0.5, 0.5}}), nullptr);
  EXPECT_NEAR(r.max_envy_ratio, 2.0, kEps);
  EXPECT_EQ(r.envy_pair, "bob/a envies bob/b");
  EXPECT_FALSE(r.envy_free);
}

TEST(AuditShares, InfeasibleAllocationIsRejected) {
  ShareProblem p = oef_three_users();
  EXPECT_THROW(audit_allocation(p, matrix({{1, 0}, {0, 0.6}, {0, 0.5}}), nullptr),
               std::invalid_argument);
}

// Random clusters of 50 entities on 6 types: max-sum-throughput's own answer
// has no efficiency gap and is PE; the equal split is SI (ratio exactly 1)
// and EF, and never beats max-sum.
TEST(AuditShares, RandomInstancesMaxSumAndEqualSplit) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> step(0.0, 1.0);
  for (int trial = 0; trial < 3; ++trial) {
    ShareProblem p;
    const std::size_t k = 6, n = 50;
    for (std::size_t j = 0; j < k; ++j) {
      p.gpu_types.push_back(fmt::format("t{}", j));
      p.capacity.push_back(1 + std::floor(8 * step(rng)));
    }
    for (std::size_t l = 0; l < n; ++l) {
      std::vector<double> w{1.0};
      for (std::size_t j = 1; j < k; ++j) w.push_back(w.back() + step(rng));
      p.add_tenant(fmt::format("u{}", l), w, 1 + std::floor(3 * step(rng)));
    }
    std::unique_ptr<SharePolicy> max_sum = policy_named("max-sum-throughput");
    AuditReport best = audit_allocation(p, max_sum->allocate(p), nullptr);
    EXPECT_NEAR(best.efficiency_gap, 0.0, 1e-7);
    EXPECT_TRUE(best.pareto_efficient) << best.pareto_improvement;

    Matrix equal(n, k);
    const double total_weight = p.total_weight();
    for (std::size_t l = 0; l < n; ++l)
      for (std::size_t j = 0; j < k; ++j)
        equal(l, j) = p.capacity[j] * p.entities[l].weight / total_weight;
    AuditReport split = audit_allocation(p, equal, nullptr);
    EXPECT_NEAR(split.min_sharing_incentive_ratio, 1.0, 1e-9);
    EXPECT_NEAR(split.max_envy_ratio, 1.0, 1e-9);
    EXPECT_GT(split.efficiency_gap, 0.0);
    EXPECT_FALSE(split.pareto_efficient);
  }
}

// max-sum-throughput on W = [[1,2],[1,3]], m = [1,1], honest answer u1 = GPU1,
// u2 = GPU2. u1 reporting 2 x 2 = 4 > 3 on gpu2 wins GPU2, worth 2 to it in
// truth: at least a 100% gain. OEF §3.1.1: "such scheme encourages u1 and u2
// to lie".
TEST(AuditProbe, MaxSumThroughputRewardsLies) {
  ShareProblem p;
  p.gpu_types = {"gpu1", "gpu2"};
  p.capacity = {1, 1};
  p.add_tenant("u1", {1, 2});
  p.add_tenant("u2", {1, 3});
  std::unique_ptr<SharePolicy> policy = policy_named("max-sum-throughput");
  AuditReport r = audit_allocation(p, matrix({{1, 0}, {0, 1}}), policy.get());
  EXPECT_TRUE(r.sp_probed);
  EXPECT_GE(r.sp_max_gain, 1.0 - 1e-7);
  EXPECT_FALSE(r.strategy_proof);
  EXPECT_EQ(r.sp_best_lie.rfind("u1 x", 0), 0u) << r.sp_best_lie;
  EXPECT_NE(r.sp_best_lie.find("on gpu2"), std::string::npos) << r.sp_best_lie;

  AuditReport off = audit_allocation(p, matrix({{1, 0}, {0, 1}}), policy.get(), no_probe());
  EXPECT_FALSE(off.sp_probed);
}

// max-min ignores speedups, so no report can move its allocation: every gain
// is 0 and the probe calls it strategy-proof. With 3 types the grid has the
// "every faster type" lie and one single-type lie per faster type.
TEST(AuditProbe, SpeedupBlindPolicyHasNothingToGain) {
  ShareProblem p;
  p.gpu_types = {"k80", "p100", "v100"};
  p.capacity = {2, 1, 1};
  p.add_tenant("u1", {1, 1.5, 2});
  p.add_tenant("u2", {1, 2, 4}, 2.0);
  std::unique_ptr<SharePolicy> policy = policy_named("max-min");
  AuditReport r = audit_allocation(p, policy->allocate(p), policy.get());
  EXPECT_TRUE(r.sp_probed);
  EXPECT_NEAR(r.sp_max_gain, 0.0, 1e-7);
  EXPECT_TRUE(r.strategy_proof);
}

// Test policies for the probe's grid, on k80/p100/v100 with one device each.
// u1 = [1, 2, 4], u2 = [1, 3, 5].
ShareProblem three_types() {
  ShareProblem p;
  p.gpu_types = {"k80", "p100", "v100"};
  p.capacity = {1, 1, 1};
  p.add_tenant("u1", {1, 2, 4});
  p.add_tenant("u2", {1, 3, 5});
  return p;
}

// Gives u1 the v100 (u2 the rest) when u1 reports v100 as more than 2.5x its
// p100, else the k80: only a single-type lie can move it.
class RatioPolicy final : public SharePolicy {
 public:
  std::string_view name() const override { return "test-ratio"; }
  Matrix allocate(const ShareProblem& p) const override {
    const auto& w = p.entities[0].speedup;
    if (w[2] > 2.5 * w[1]) return matrix({{0, 0, 1}, {1, 1, 0}});
    return matrix({{1, 0, 0}, {0, 1, 1}});
  }
};

// Equal split, shrunk for an entity by honest/reported on every type it
// inflates: every lie hurts the liar and nobody else.
class PunishingPolicy final : public SharePolicy {
 public:
  explicit PunishingPolicy(ShareProblem honest) : honest_(std::move(honest)) {}
  std::string_view name() const override { return "test-punishing"; }
  mutable int calls = 0;
  Matrix allocate(const ShareProblem& p) const override {
    ++calls;
    Matrix x(p.num_entities(), p.num_types());
    for (std::size_t e = 0; e < p.num_entities(); ++e) {
      double keep = 1.0;
      for (std::size_t j = 0; j < p.num_types(); ++j)
        keep *= honest_.entities[e].speedup[j] / p.entities[e].speedup[j];
      for (std::size_t j = 0; j < p.num_types(); ++j)
        x(e, j) = keep * p.capacity[j] / static_cast<double>(p.num_entities());
    }
    return x;
  }

 private:
  ShareProblem honest_;
};

// Honest: u1 has the k80 (1). Inflating p100 and v100 together keeps the
// ratio at 2; v100 alone x1.25 reaches 2.5 (not above), x1.5 reaches 3 and
// wins the v100, worth 4: gain 3, found only by the single-type shape.
TEST(AuditProbe, SingleTypeLiesAreOnTheGrid) {
  ShareProblem p = three_types();
  RatioPolicy policy;
  AuditReport r = audit_allocation(p, policy.allocate(p), &policy);
  EXPECT_NEAR(r.sp_max_gain, 3.0, kEps);
  EXPECT_EQ(r.sp_best_lie, "u1 x1.5 on v100");
  EXPECT_FALSE(r.strategy_proof);

  // With k = 2 "every faster type" and "the one faster type" coincide and run
  // once, named by the type.
  ShareProblem two;
  two.gpu_types = {"k80", "v100"};
  two.capacity = {1, 1};
  two.add_tenant("u1", {1, 4});
  two.add_tenant("u2", {1, 5});
  PunishingPolicy punishing(two);
  AuditOptions factor2;
  factor2.sp_factors = {2.0};
  const Matrix honest = punishing.allocate(two);
  punishing.calls = 0;
  AuditReport k2 = audit_allocation(two, honest, &punishing, factor2);
  EXPECT_EQ(punishing.calls, 2);            // 2 entities x 1 factor x 1 shape
  EXPECT_NEAR(k2.sp_max_gain, -0.5, kEps);  // keeps 1/2
  EXPECT_EQ(k2.sp_best_lie, "u1 x2 on v100");
}

// Every lie hurts: the best lie on the default grid is a single type x1.1,
// keeping 1/1.1 of the honest share (all-faster x1.1 keeps 1/1.21). The probe
// reports that negative gain rather than flooring it at 0.
TEST(AuditProbe, ReportsNegativeGainWhenEveryLieHurts) {
  ShareProblem p = three_types();
  PunishingPolicy policy(p);
  const Matrix honest = policy.allocate(p);
  policy.calls = 0;
  AuditReport r = audit_allocation(p, honest, &policy);
  EXPECT_EQ(policy.calls, 2 * 5 * 3);  // entities x factors x {all, p100, v100}
  EXPECT_TRUE(r.sp_probed);
  EXPECT_NEAR(r.sp_max_gain, 1 / 1.1 - 1, kEps);
  EXPECT_EQ(r.sp_best_lie, "u1 x1.1 on p100");
  EXPECT_TRUE(r.strategy_proof);
}

// OEF Theorem 5.4: the non-cooperative OEF is strategy-proof.
TEST(AuditProbe, OefNonCooperativeIsStrategyProofOnPaperExample) {
  ShareProblem p = oef_three_users();
  std::unique_ptr<SharePolicy> policy = policy_named("oef-noncoop");
  AuditReport r = audit_allocation(p, policy->allocate(p), policy.get());
  EXPECT_TRUE(r.sp_probed);
  EXPECT_LE(r.sp_max_gain, 1e-6) << r.sp_best_lie;
  EXPECT_TRUE(r.strategy_proof);
}

// OEF §2.4: under Gandiva_fair u1 gains by reporting [1, 2.8] (1.18 -> 1.22
// in the paper's rounding, about 3%); the default grid finds a gain too.
TEST(AuditProbe, GandivaFairIsNotStrategyProofOnPaperExample) {
  ShareProblem p = oef_three_users();
  std::unique_ptr<SharePolicy> policy = policy_named("gandiva-fair");
  const Matrix honest = policy->allocate(p);
  AuditReport r = audit_allocation(p, honest, policy.get());
  EXPECT_GT(r.sp_max_gain, 1e-6);
  EXPECT_FALSE(r.strategy_proof);
  // The paper's own lie, alone on the grid: 2 x 1.4 = 2.8.
  AuditOptions paper_lie;
  paper_lie.sp_factors = {1.4};
  AuditReport u1 = audit_allocation(p, honest, policy.get(), paper_lie);
  EXPECT_EQ(u1.sp_best_lie, "u1 x1.4 on gpu2");
  EXPECT_GT(u1.sp_max_gain, 0.01);
  EXPECT_LT(u1.sp_max_gain, 0.06);
}

// OEF §2.4: under Gavel u1 gains by reporting 2.5 on GPU2 (factor 1.25).
TEST(AuditProbe, GavelIsNotStrategyProofOnPaperExample) {
  ShareProblem p = oef_three_users();
  std::unique_ptr<SharePolicy> policy = policy_named("gavel");
  AuditOptions paper_lie;
  paper_lie.sp_factors = {1.25};
  AuditReport r = audit_allocation(p, policy->allocate(p), policy.get(), paper_lie);
  EXPECT_EQ(r.sp_best_lie, "u1 x1.25 on gpu2");
  EXPECT_GT(r.sp_max_gain, 0.01);
  EXPECT_FALSE(r.strategy_proof);
}

// OEF §3.1.2 / Fig. 2: cooperative OEF on W = [[1,2],[1,4]] gives
// [[1, 1/4], [0, 3/4]] (u1's envy row binds: 1 + 2y = 2(1 - y)). u1 reporting
// [1, 3] (x1.5) binds at 1 + 3y = 3(1 - y): y = 1/3, worth 1 + 2/3 in truth
// against 1.5 -> gain 1/9. u2's lies leave u1's row, hence X, unchanged.
TEST(AuditProbe, OefCooperativeRewardsTheFig2Lie) {
  ShareProblem p;
  p.gpu_types = {"gpu1", "gpu2"};
  p.capacity = {1, 1};
  p.add_tenant("u1", {1, 2});
  p.add_tenant("u2", {1, 4});
  std::unique_ptr<SharePolicy> policy = policy_named("oef-coop");
  AuditOptions fig2;
  fig2.sp_factors = {1.5};
  AuditReport r = audit_allocation(p, matrix({{1, 0.25}, {0, 0.75}}), policy.get(), fig2);
  EXPECT_NEAR(r.sp_max_gain, 1.0 / 9, 1e-6);
  EXPECT_EQ(r.sp_best_lie, "u1 x1.5 on gpu2");
  EXPECT_FALSE(r.strategy_proof);
}

// OEF Theorems 5.1-5.3: cooperative OEF is EF, SI and PE; on eq. (1) its
// answer has total 4.5 (X* of eq. 2 is one optimum).
TEST(AuditProbe, OefCooperativeIsEfSiPeOnPaperExample) {
  ShareProblem p = oef_three_users();
  std::unique_ptr<SharePolicy> policy = policy_named("oef-coop");
  AuditReport r = audit_allocation(p, policy->allocate(p), nullptr);
  EXPECT_TRUE(r.envy_free) << r.envy_pair;
  EXPECT_TRUE(r.sharing_incentive) << r.sharing_incentive_worst;
  EXPECT_TRUE(r.pareto_efficient) << r.pareto_improvement;
  EXPECT_NEAR(r.total_throughput, 4.5, 1e-6);
}

}  // namespace
}  // namespace fairgpu
