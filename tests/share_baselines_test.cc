// The baseline share policies: gandiva-fair (OEF §2.4), max-min (the
// heterogeneity-unaware equal split) and max-sum-throughput (OEF eq. 4).
// Expected allocations are derived by hand in the comments; exact values are
// checked to 1e-9.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "fairgpu/policy.h"
#include "fairgpu/share_problem.h"

namespace fairgpu {
namespace {

constexpr double kTol = 1e-9;

// "u" + std::to_string(i), spelled so that GCC 12 does not raise its
// -Wrestrict false positive (GCC bug 105651) under -Werror.
std::string numbered(const char* prefix, std::size_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

ShareProblem make_problem(std::vector<double> capacity) {
  ShareProblem p;
  for (std::size_t j = 0; j < capacity.size(); ++j) p.gpu_types.push_back(numbered("t", j));
  p.capacity = std::move(capacity);
  return p;
}

// Speedup rows W (one tenant per row), optional demands (empty: none).
ShareProblem make_problem(std::vector<double> capacity, const std::vector<std::vector<double>>& w,
                          const std::vector<double>& demand = {}) {
  ShareProblem p = make_problem(std::move(capacity));
  for (std::size_t l = 0; l < w.size(); ++l)
    p.add_tenant(numbered("u", l + 1), w[l], 1.0, demand.empty() ? kNoDemand : demand[l]);
  return p;
}

Matrix run(std::string_view policy, const ShareProblem& p) {
  auto pol = make_share_policy(policy);
  EXPECT_NE(pol, nullptr) << policy;
  if (!pol) return {};
  EXPECT_EQ(pol->name(), policy);
  return pol->allocate(p);
}

void expect_matrix_near(const Matrix& x, const std::vector<std::vector<double>>& want, double tol) {
  ASSERT_EQ(x.rows(), want.size());
  for (std::size_t e = 0; e < want.size(); ++e) {
    ASSERT_EQ(x.cols(), want[e].size());
    for (std::size_t j = 0; j < want[e].size(); ++j)
      EXPECT_NEAR(x(e, j), want[e][j], tol) << "entity " << e << " type " << j;
  }
}

double devices(const ShareProblem& p, const Matrix& x, std::size_t e) {
  double held = 0;
  for (std::size_t j = 0; j < p.num_types(); ++j) held += x(e, j);
  return held;
}

// Random instance: up to `max_entities` entities spread over tenants with 1-3
// job types each, k types with capacities 0..8 (at least one device overall),
// speedups W[0] = 1 and W[j] in [0.3, 6): mostly increasing along the type
// order, sometimes not (a job that a "fast" type does not suit). A third of the
// tenants have a demand.
ShareProblem random_instance(std::mt19937& rng, std::size_t max_entities, std::size_t max_types) {
  std::uniform_int_distribution<std::size_t> nd(1, max_entities), kd(1, max_types), jt(1, 3);
  std::uniform_int_distribution<int> capd(0, 8), wd(1, 3);
  std::uniform_real_distribution<double> u(0, 1), sp(0.3, 6.0);
  const std::size_t n = nd(rng), k = kd(rng);
  std::vector<double> cap(k);
  for (auto& c : cap) c = capd(rng);
  if (cap[0] == 0) cap[0] = 1;
  ShareProblem p = make_problem(cap);
  const double total = p.total_capacity();
  auto speedup = [&] {
    std::vector<double> w{1.0};
    for (std::size_t j = 1; j < k; ++j) w.push_back(sp(rng));
    if (u(rng) < 0.7) std::sort(w.begin() + 1, w.end());
    return w;
  };
  for (std::size_t made = 0, t = 0; made < n; ++t) {
    const std::size_t types = std::min(jt(rng), n - made);
    const double weight = wd(rng);
    const double demand =
        u(rng) < 1.0 / 3 ? 2.0 * total * u(rng) / static_cast<double>(n) : kNoDemand;
    std::string name = numbered("u", t);
    if (types == 1) {
      p.add_tenant(name, speedup(), weight, demand);
    } else {
      std::vector<std::pair<std::string, std::vector<double>>> jobs;
      for (std::size_t i = 0; i < types; ++i) jobs.emplace_back(numbered("j", i), speedup());
      p.add_tenant_job_types(name, std::move(jobs), weight, demand);
    }
    made += types;
  }
  return p;
}

// ---------------------------------------------------------------- gandiva-fair

// OEF §2.4, expression (1): W = [[1,2],[1,3],[1,4]], m = [1,1], ratios
// r = W[1]/W[0] = 2, 3, 4. Equal split: 1/3 of each type each.
// Trade 1: seller u1 (lowest r holding fast share); buyers u2, u3; buyer u3
//   (highest r) at the second price r_u2 = 3. f = min(1/3, (1/3)/3) = 1/9:
//   u1 = [2/3, 2/9], u3 = [0, 4/9].
// Trade 2: seller u1; the only buyer holding slow share is u2, so the price is
//   the midpoint (3 + 2)/2 = 2.5. f = min(2/9, (1/3)/2.5 = 2/15) = 2/15:
//   u1 = [1, 2/9 - 2/15 = 4/45], u2 = [0, 1/3 + 2/15 = 7/15].
// Then only u1 holds slow share and nobody has a lower ratio: stop.
// Throughputs: [1 + 8/45, 3 * 7/15 = 7/5, 4 * 4/9 = 16/9]
// (paper, from rounded X: X = [[1,.09],[0,.47],[0,.44]], E = [1.18,1.41,1.76]).
TEST(GandivaFair, OefSection24Example) {
  ShareProblem p = make_problem({1, 1}, {{1, 2}, {1, 3}, {1, 4}});
  Matrix x = run("gandiva-fair", p);
  expect_matrix_near(x, {{1, 4.0 / 45}, {0, 7.0 / 15}, {0, 4.0 / 9}}, kTol);
  EXPECT_NEAR(p.throughput(0, x), 1 + 8.0 / 45, kTol);
  EXPECT_NEAR(p.throughput(1, x), 7.0 / 5, kTol);
  EXPECT_NEAR(p.throughput(2, x), 16.0 / 9, kTol);
  expect_matrix_near(x, {{1, 0.09}, {0, 0.47}, {0, 0.44}}, 0.02);
  EXPECT_NEAR(p.throughput(0, x), 1.18, 0.02);
  EXPECT_NEAR(p.throughput(1, x), 1.41, 0.02);
  EXPECT_NEAR(p.throughput(2, x), 1.76, 0.02);
  EXPECT_EQ(check_feasible(p, x), "");
}

// OEF §2.4, the lie: u1 reports W = [1, 2.8] instead of [1, 2]. Trade 1 is
// unchanged (f = 1/9 at price 3). Trade 2's midpoint price becomes
// (3 + 2.8)/2 = 2.9, f = min(2/9, (1/3)/2.9) = 10/87: u1 keeps
// 2/9 - 10/87 = 28/261 ~ 0.1073 of the fast type and all the slow type.
// True throughput 1 + 2 * 28/261 ~ 1.2146 > honest 1 + 8/45 ~ 1.1778.
// Paper: X^f = [[1,.11],[0,.45],[0,.44]], E^f = [1.22,1.35,1.76].
TEST(GandivaFair, OefSection24LyingSellerGains) {
  ShareProblem lied = make_problem({1, 1}, {{1, 2.8}, {1, 3}, {1, 4}});
  ShareProblem truth = make_problem({1, 1}, {{1, 2}, {1, 3}, {1, 4}});
  Matrix x = run("gandiva-fair", lied);
  const double u1_fast = 2.0 / 9 - (1.0 / 3) / 2.9;
  expect_matrix_near(x, {{1, u1_fast}, {0, 1.0 / 3 + (1.0 / 3) / 2.9}, {0, 4.0 / 9}}, kTol);
  EXPECT_NEAR(u1_fast, 28.0 / 261, kTol);
  expect_matrix_near(x, {{1, 0.11}, {0, 0.45}, {0, 0.44}}, 0.02);
  const double true_u1 = truth.throughput(0, x);
  EXPECT_NEAR(true_u1, 1 + 2 * 28.0 / 261, kTol);
  EXPECT_NEAR(true_u1, 1.22, 0.02);
  EXPECT_NEAR(truth.throughput(1, x), 1.35, 0.02);
  EXPECT_NEAR(truth.throughput(2, x), 1.76, 0.02);
  const double honest_u1 = truth.throughput(0, run("gandiva-fair", truth));
  EXPECT_GT(true_u1, honest_u1 + 0.03);  // 1.2146 vs 1.1778: not strategy-proof
}

// Three types, traded pair by pair. W1 = [1,2,3], W2 = [1,4,9], m = [1,1,1].
// Equal split: both [1/2, 1/2, 1/2]; throughputs 3 and 7.
// Sweep 1:
//  (0,1): r = 2, 4. Seller u1, single buyer u2, price (2+4)/2 = 3,
//         f = min(1/2, (1/2)/3) = 1/6: u1 = [1, 1/3, 1/2], u2 = [0, 2/3, 1/2].
//         u2 has no type-0 share left: done.
//  (0,2): r = 3, 9. u2 holds no type 0: no trade.
//  (1,2): r = 3/2, 9/4. Seller u1 (holds type 2), buyer u2 (holds 2/3 of type 1),
//         price (3/2 + 9/4)/2 = 15/8, f = min(1/2, (2/3)/(15/8) = 16/45) = 16/45:
//         u1 = [1, 1/3 + 15/8 * 16/45 = 1, 1/2 - 16/45 = 13/90],
//         u2 = [0, 0, 1/2 + 16/45 = 77/90].
// Sweep 2: u2 holds only type 2 and u1 has the lower ratio on every pair: no
// trade, stop. Throughputs: u1 = 1 + 2 + 3 * 13/90 = 103/30 (> 3),
// u2 = 9 * 77/90 = 7.7 (> 7).
TEST(GandivaFair, ThreeTypesPairByPair) {
  ShareProblem p = make_problem({1, 1, 1}, {{1, 2, 3}, {1, 4, 9}});
  Matrix x = run("gandiva-fair", p);
  expect_matrix_near(x, {{1, 1, 13.0 / 90}, {0, 0, 77.0 / 90}}, kTol);
  EXPECT_NEAR(p.throughput(0, x), 103.0 / 30, kTol);
  EXPECT_NEAR(p.throughput(1, x), 7.7, kTol);
  EXPECT_EQ(check_feasible(p, x), "");
}

// A seller whose tenant has a demand: every sale at price p > 1 grows its
// device count by (p - 1) * f. W1 = [1,2], W2 = [1,4], m = [2,2]; max-min gives
// both [1,1] (u1's demand does not bind: 2 <= demand). r = 2, 4; single buyer,
// price 3.
struct CappedSellerCase {
  const char* name;
  double demand;  // u1's
  std::vector<std::vector<double>> want;
};

TEST(GandivaFair, DemandCappedSeller) {
  const CappedSellerCase cases[] = {
      // No cap: f = min(1, 1/3) = 1/3 -> u1 = [2, 2/3], u2 = [0, 4/3].
      {"uncapped", kNoDemand, {{2, 2.0 / 3}, {0, 4.0 / 3}}},
      // Headroom 0.2: f = min(1, 1/3, 0.2/(3-1) = 0.1) = 0.1
      // -> u1 = [1.3, 0.9] (2.2 devices = demand), u2 = [0.7, 1.1].
      {"headroom 0.2", 2.2, {{1.3, 0.9}, {0.7, 1.1}}},
      // Already at its demand: it cannot take more devices, so no trade.
      {"at demand", 2.0, {{1, 1}, {1, 1}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ShareProblem p = make_problem({2, 2}, {{1, 2}, {1, 4}}, {c.demand, kNoDemand});
    Matrix x = run("gandiva-fair", p);
    expect_matrix_near(x, c.want, kTol);
    EXPECT_EQ(check_feasible(p, x), "");
  }
}

// Every trade makes the seller strictly and the buyer weakly better off, so no
// entity ends below its throughput under the max-min split it started from.
TEST(GandivaFair, SharingIncentiveOnRandomInstances) {
  std::mt19937 rng(20240611);
  auto gandiva = make_share_policy("gandiva-fair");
  auto maxmin = make_share_policy("max-min");
  ASSERT_TRUE(gandiva && maxmin);
  int improved = 0;
  for (int it = 0; it < 300; ++it) {
    ShareProblem p = random_instance(rng, 20, 4);
    SCOPED_TRACE(numbered("instance ", it));
    Matrix start = maxmin->allocate(p);
    Matrix x = gandiva->allocate(p);
    ASSERT_EQ(check_feasible(p, x), "");
    bool better = false;
    for (std::size_t e = 0; e < p.num_entities(); ++e) {
      const double before = p.throughput(e, start), after = p.throughput(e, x);
      EXPECT_GE(after, before - 1e-9 * std::max(1.0, before)) << p.entities[e].name;
      better = better || after > before + 1e-9;
    }
    improved += better;
  }
  EXPECT_GT(improved, 100);  // trading actually happens on most instances
}

// Trading runs until no trade is left: on two types without demands, no entity
// with a lower ratio W[1]/W[0] still holds fast share while one with a higher
// ratio still holds slow share (that pair could trade at the midpoint price).
TEST(GandivaFair, TwoTypesNoTradeLeft) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::size_t> nd(2, 20);
  std::uniform_real_distribution<double> sp(0.5, 6.0);
  std::uniform_int_distribution<int> capd(1, 8), wd(1, 3);
  for (int it = 0; it < 200; ++it) {
    SCOPED_TRACE(numbered("instance ", it));
    ShareProblem p = make_problem({static_cast<double>(capd(rng)), static_cast<double>(capd(rng))});
    const std::size_t n = nd(rng);
    for (std::size_t l = 0; l < n; ++l) p.add_tenant(numbered("u", l), {1, sp(rng)}, wd(rng));
    Matrix x = run("gandiva-fair", p);
    ASSERT_EQ(check_feasible(p, x), "");
    for (std::size_t s = 0; s < n; ++s) {
      for (std::size_t b = 0; b < n; ++b) {
        if (p.entities[s].speedup[1] < p.entities[b].speedup[1]) {
          EXPECT_FALSE(x(s, 1) > 1e-9 && x(b, 0) > 1e-9) << "seller " << s << " buyer " << b;
        }
      }
    }
  }
}

// --------------------------------------------------------------------- max-min

// Weights [1, 2], m = [3, 6]: fractions 1/3 and 2/3 of every type.
TEST(MaxMin, WeightedEqualSplit) {
  ShareProblem p = make_problem({3, 6});
  p.add_tenant("light", {1, 2}, 1.0);
  p.add_tenant("heavy", {1, 5}, 2.0);
  Matrix x = run("max-min", p);
  expect_matrix_near(x, {{1, 2}, {2, 4}}, kTol);
}

// Progressive filling of f_t / weight_t with caps f_t * sum m <= demand_t.
struct MaxMinDemandCase {
  const char* name;
  std::vector<double> capacity;
  std::vector<double> weight;
  std::vector<double> demand;
  std::vector<std::vector<double>> want;
};

TEST(MaxMin, DemandCapsProgressiveFilling) {
  const double inf = kNoDemand;
  // clang-format off
  const MaxMinDemandCase cases[] = {
      // m = [2,4] (6 devices), three equal tenants, u1 capped at 1 device:
      // f1 = 1/6, the others share 5/6 -> 5/12 each = [5/6, 5/3].
      {"one capped", {2, 4}, {1, 1, 1}, {1, inf, inf},
       {{1.0 / 3, 2.0 / 3}, {5.0 / 6, 5.0 / 3}, {5.0 / 6, 5.0 / 3}}},
      // Demand above the equal share does not bind: 1/3 each = [2/3, 4/3].
      {"loose cap", {2, 4}, {1, 1, 1}, {2.5, inf, inf},
       {{2.0 / 3, 4.0 / 3}, {2.0 / 3, 4.0 / 3}, {2.0 / 3, 4.0 / 3}}},
      // Weights [1,1,2], m = [4,4] (8 devices), caps f1 <= 1/8, f3 <= 3/8,
      // i.e. 1/8 and 3/16 per unit of weight. Level 1/4 per weight caps u1
      // (f1 = 1/8); the rest 7/8 over weight 3 gives level 7/24, which caps u3
      // (3/8 < 7/12); u2 takes what is left: f2 = 1 - 1/8 - 3/8 = 1/2.
      // x = f * m: u1 = [1/2, 1/2], u2 = [2, 2], u3 = [3/2, 3/2].
      {"cascade", {4, 4}, {1, 1, 2}, {1, inf, 3},
       {{0.5, 0.5}, {2.0, 2.0}, {1.5, 1.5}}},
      // Everyone capped: 1 + 2 devices of 6; the rest stays idle.
      {"all capped", {3, 3}, {1, 1}, {1, 2}, {{0.5, 0.5}, {1, 1}}},
  };
  // clang-format on
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ShareProblem p = make_problem(c.capacity);
    for (std::size_t t = 0; t < c.weight.size(); ++t)
      p.add_tenant(numbered("u", t), std::vector<double>(c.capacity.size(), 1.0), c.weight[t],
                   c.demand[t]);
    Matrix x = run("max-min", p);
    expect_matrix_near(x, c.want, kTol);
    EXPECT_EQ(check_feasible(p, x), "");
  }
}

// A tenant with two job types splits its fraction equally between them:
// m = [2, 2], two tenants of weight 1 -> 1/2 each; "multi" has two entities at
// 1/4 each = [1/2, 1/2]; "single" gets [1, 1]. Speedups do not matter.
TEST(MaxMin, JobTypesSplitTheTenantShare) {
  ShareProblem p = make_problem({2, 2});
  p.add_tenant_job_types("multi", {{"a", {1, 3}}, {"b", {1, 1.5}}});
  p.add_tenant("single", {1, 10});
  Matrix x = run("max-min", p);
  expect_matrix_near(x, {{0.5, 0.5}, {0.5, 0.5}, {1, 1}}, kTol);
}

// A tenant's demand is split over its job types like its weight
// (entity_demand): "multi" with demand 1 caps each job type at 1/2 device,
// i.e. fraction 1/8 of the 4 devices, below the level 1/4 that weight 1/2
// would reach. "single" takes the rest: 3/4 -> [3/2, 3/2].
TEST(MaxMin, JobTypesShareTheTenantDemand) {
  ShareProblem p = make_problem({2, 2});
  p.add_tenant_job_types("multi", {{"a", {1, 3}}, {"b", {1, 1.5}}}, 1.0, /*demand=*/1.0);
  p.add_tenant("single", {1, 10});
  Matrix x = run("max-min", p);
  expect_matrix_near(x, {{0.25, 0.25}, {0.25, 0.25}, {1.5, 1.5}}, kTol);
  EXPECT_EQ(check_feasible(p, x), "");
}

// ----------------------------------------------------------- max-sum-throughput

// W = [[1,2],[1,3],[1,4]], m = [1,1] (OEF §3.1.1).
struct MaxSumCase {
  const char* name;
  std::vector<double> demand;
  double optimum;
  std::vector<double> fast;  // expected share of type 1 per entity
};

TEST(MaxSum, HandComputedOptimum) {
  const double inf = kNoDemand;
  const MaxSumCase cases[] = {
      // All of type 1 to u3 (4), type 0 to anyone (1): 5.
      {"no demands", {inf, inf, inf}, 5.0, {0, 0, 1}},
      // u3 may hold 0.5 devices: best on its fastest type, 0.5 * 4; the other
      // half of type 1 goes to u2 (0.5 * 3); type 0 to u1 or u2 (1): 4.5.
      {"u3 capped", {inf, inf, 0.5}, 4.5, {0, 0.5, 0.5}},
      // u2 and u3 at 0.5 device each: type 1 split 0.5/0.5 (2 + 1.5), type 0
      // must go to u1 (1): 4.5.
      {"u2 and u3 capped", {inf, 0.5, 0.5}, 4.5, {0, 0.5, 0.5}},
      // Nobody may hold more than 0.4: 0.4 of type 1 to u3 (1.6), 0.4 to u2
      // (1.2), 0.2 to u1 (0.4) and 0.2 of type 0 to u1 (0.2): 3.4.
      {"all capped", {0.4, 0.4, 0.4}, 3.4, {0.2, 0.4, 0.4}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ShareProblem p = make_problem({1, 1}, {{1, 2}, {1, 3}, {1, 4}}, c.demand);
    Matrix x = run("max-sum-throughput", p);
    ASSERT_EQ(check_feasible(p, x), "");
    double total = 0;
    for (std::size_t e = 0; e < 3; ++e) {
      total += p.throughput(e, x);
      EXPECT_NEAR(x(e, 1), c.fast[e], kTol) << "entity " << e;
    }
    EXPECT_NEAR(total, c.optimum, kTol);
  }
}

// --------------------------------------------------------------- all baselines

// Capacities and demands respected, no negative entries, on random instances
// with up to 50 entities and 6 types. gandiva-fair never loses total
// throughput against max-min and never beats max-sum-throughput.
TEST(ShareBaselines, FeasibleOnRandomInstances) {
  std::mt19937 rng(7);
  auto maxsum = make_share_policy("max-sum-throughput");
  auto maxmin = make_share_policy("max-min");
  auto gandiva = make_share_policy("gandiva-fair");
  ASSERT_TRUE(maxsum && maxmin && gandiva);
  for (int it = 0; it < 60; ++it) {
    ShareProblem p = random_instance(rng, 50, 6);
    SCOPED_TRACE(numbered("instance ", it));
    double sum[3] = {0, 0, 0};
    int i = 0;
    for (const SharePolicy* pol : {maxmin.get(), gandiva.get(), maxsum.get()}) {
      SCOPED_TRACE(std::string(pol->name()));
      Matrix x = pol->allocate(p);
      EXPECT_EQ(check_feasible(p, x), "");
      for (std::size_t e = 0; e < p.num_entities(); ++e) {
        for (std::size_t j = 0; j < p.num_types(); ++j) EXPECT_GE(x(e, j), 0.0);
        sum[i] += p.throughput(e, x);
      }
      if (pol == maxmin.get()) {
        // Heterogeneity-unaware: every entity holds the same fraction of
        // every type, x_e = (devices_e / sum m) * m.
        double used = 0;
        for (std::size_t e = 0; e < p.num_entities(); ++e) {
          const double held = devices(p, x, e);
          used += held;
          for (std::size_t j = 0; j < p.num_types(); ++j)
            EXPECT_NEAR(x(e, j), held / p.total_capacity() * p.capacity[j], 1e-9);
        }
        // Capacity idles only when every entity is at its demand.
        if (used < p.total_capacity() - 1e-9) {
          for (std::size_t e = 0; e < p.num_entities(); ++e)
            EXPECT_NEAR(devices(p, x, e), p.entity_demand(e), 1e-9);
        }
      }
      ++i;
    }
    const double scale = std::max(1.0, sum[2]);
    EXPECT_GE(sum[1], sum[0] - 1e-9 * scale);  // gandiva-fair >= max-min
    EXPECT_LE(sum[1], sum[2] + 1e-6 * scale);  // max-sum is the upper bound
  }
}

TEST(ShareBaselines, RegisteredByName) {
  for (const char* name : {"max-min", "gandiva-fair", "max-sum-throughput"}) {
    auto pol = make_share_policy(name);
    ASSERT_NE(pol, nullptr) << name;
    EXPECT_EQ(pol->name(), name);
    const PolicyInfo* info = PolicyRegistry::builtin().find(name);
    ASSERT_NE(info, nullptr);
    EXPECT_FALSE(info->description.empty());
  }
}

}  // namespace
}  // namespace fairgpu
