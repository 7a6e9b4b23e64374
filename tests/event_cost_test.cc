// Event-cost simulation (docs/design.md §5, RoundPolicy::stability): the
// scheduling points a policy calls stable are not planned, and every result
// stays what planning every point gives, bit for bit; the sparse per-tenant
// series gathered from the touched tenants equal the dense ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
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

// Forwards to a policy, counting plan() calls; `stepping` hides its
// stability, so the simulator plans at every point (as before the change).
class Probe final : public RoundPolicy {
 public:
  Probe(std::unique_ptr<RoundPolicy> inner, bool stepping)
      : inner_(std::move(inner)), stepping_(stepping) {}
  std::string_view name() const override { return inner_->name(); }
  std::string_view level() const override { return inner_->level(); }
  double interval() const override { return inner_->interval(); }
  RoundPlan plan(const SchedulerState& s) override {
    ++plans;
    return inner_->plan(s);
  }
  bool reads_progress() const override { return inner_->reads_progress(); }
  std::vector<Assignment> midround(const SchedulerState& s, const std::vector<DeviceRef>& free,
                                   double round_end) override {
    return inner_->midround(s, free, round_end);
  }
  bool starts_midround() const override { return inner_->starts_midround(); }
  Stability stability(const SchedulerState& s) const override {
    return stepping_ ? Stability{} : inner_->stability(s);
  }
  int plans = 0;

 private:
  std::unique_ptr<RoundPolicy> inner_;
  bool stepping_;
};

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Two 1-GPU jobs and a 2-GPU one on three GPUs of two types: waiting,
// renewals at lease ends, completions inside rounds, and a long stretch
// where one job runs alone.
Workload mixed() {
  return workload({job("long", "a", "b", 1, 0, 200000.0), job("short", "b", "b", 1, 0, 100.0),
                   job("gang", "b", "a", 2, 5, 4000.0), job("late", "c", "b", 1, 7000, 3000.0)});
}

struct Outcome {
  SimResult result;
  int plans = 0;
};

Outcome run(const std::string& policy, bool stepping, bool sparse, bool one_type = false) {
  const Workload w = mixed();
  ClusterModel model =
      bind_model(one_type ? toy_cluster({{"fast", 3}}) : toy_cluster({{"slow", 2}, {"fast", 1}}),
                 toy::toy_profiles(), w, 10.0);
  Probe probe(make_round_policy(policy, {}), stepping);
  SimOptions o;
  o.sparse_tenant_series = sparse;
  Outcome r{simulate(model, w, probe, o), 0};
  r.plans = probe.plans;
  return r;
}

// `b` may hold runs (RoundSample::rounds > 1) where `a` stepped point by
// point: a run stands for its points' rounds, its sums theirs (up to
// round-off: one sum for the run), its averages over their span.
void expect_same_rounds(const SimResult& a, const SimResult& b, std::size_t k) {
  std::size_t i = 0;
  for (std::size_t r = 0; r < b.rounds.size(); ++r) {
    const RoundSample& y = b.rounds[r];
    SCOPED_TRACE("round " + std::to_string(i) + " (record " + std::to_string(r) + ")");
    ASSERT_LE(i + static_cast<std::size_t>(y.rounds), a.rounds.size());
    if (y.rounds > 1) {
      const RoundSample &first = a.rounds[i], &last = a.rounds[i + y.rounds - 1];
      auto near = [](double u, double v) { return std::abs(u - v) <= 1e-9 * std::max(1.0, std::abs(v)); };
      EXPECT_TRUE(same_bits(y.start, first.start));
      EXPECT_TRUE(near(y.end, last.end));
      double busy = 0, throughput = 0;
      for (std::int64_t q = 0; q < y.rounds; ++q) {
        const RoundSample& x = a.rounds[i + static_cast<std::size_t>(q)];
        EXPECT_EQ(x.rounds, 1);
        EXPECT_FALSE(x.recomputed);
        EXPECT_EQ(x.active_jobs, y.active_jobs);
        EXPECT_EQ(x.plan_idle_waiting_gpus, y.plan_idle_waiting_gpus);
        busy += x.busy_gpu_seconds;
        throughput += x.throughput_integral;
      }
      EXPECT_TRUE(near(y.busy_gpu_seconds, busy)) << y.busy_gpu_seconds << " vs " << busy;
      EXPECT_TRUE(near(y.throughput_integral, throughput));
      i += static_cast<std::size_t>(y.rounds);
      continue;
    }
    const RoundSample& x = a.rounds[i++];
    EXPECT_TRUE(same_bits(x.start, y.start) && same_bits(x.end, y.end));
    EXPECT_EQ(x.recomputed, y.recomputed);
    EXPECT_EQ(x.active_jobs, y.active_jobs);
    EXPECT_TRUE(same_bits(x.busy_gpu_seconds, y.busy_gpu_seconds));
    EXPECT_TRUE(same_bits(x.contended_s, y.contended_s));
    EXPECT_TRUE(same_bits(x.throughput_integral, y.throughput_integral));
    EXPECT_TRUE(same_bits(x.contended_throughput, y.contended_throughput));
    EXPECT_TRUE(same_bits(x.idle_waiting_gpu_seconds, y.idle_waiting_gpu_seconds));
    EXPECT_EQ(x.plan_idle_waiting_gpus, y.plan_idle_waiting_gpus);
    EXPECT_TRUE(same_bits(x.estimated_throughput, y.estimated_throughput) ||
                (std::isnan(x.estimated_throughput) && std::isnan(y.estimated_throughput)));
    std::vector<double> tx, ty;
    for_each_tenant(x, k, [&](std::size_t t, int active, double tp, const double* g) {
      tx.insert(tx.end(), {double(t), double(active), tp});
      tx.insert(tx.end(), g, g + k);
    });
    for_each_tenant(y, k, [&](std::size_t t, int active, double tp, const double* g) {
      ty.insert(ty.end(), {double(t), double(active), tp});
      ty.insert(ty.end(), g, g + k);
    });
    EXPECT_EQ(tx, ty);
  }
  EXPECT_EQ(i, a.rounds.size());
}

void expect_same_jobs(const SimResult& a, const SimResult& b) {
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (std::size_t i = 0; i < a.jobs.size(); ++i) {
    const JobRecord &x = a.jobs[i], &y = b.jobs[i];
    SCOPED_TRACE(x.id);
    for (auto f : {&JobRecord::first_start, &JobRecord::finish, &JobRecord::done,
                   &JobRecord::attained_gpu_seconds, &JobRecord::fair_gpu_seconds,
                   &JobRecord::overhead_seconds, &JobRecord::contention_avg})
      EXPECT_TRUE(same_bits(x.*f, y.*f) || (std::isnan(x.*f) && std::isnan(y.*f)));
    EXPECT_EQ(x.restarts, y.restarts);
    EXPECT_EQ(x.preemptions, y.preemptions);
  }
}

class EventCost : public testing::TestWithParam<std::string> {};

TEST_P(EventCost, SkippingStablePointsChangesNoResult) {
  const Outcome stepped = run(GetParam(), true, true);
  const Outcome skipped = run(GetParam(), false, true);
  expect_same_jobs(stepped.result, skipped.result);
  expect_same_rounds(stepped.result, skipped.result, 2);
  EXPECT_LE(skipped.plans, stepped.plans);
  // Every job finishes: the short one at its 10 s restart overhead + 100 s
  // on a GPU of its own, the long one runs alone for most of the run.
  EXPECT_FALSE(std::isnan(rec(skipped.result, "long").finish));
  EXPECT_LT(rec(skipped.result, "short").finish, 400.0);
}

// Shockwave is stable only where every running job has one GPU type it can
// run on (its re-plans could move it otherwise): on one type, with a job
// that waits for the gang and a long stretch alone, the same results while
// most points are not planned.
TEST(EventCostShockwave, OneTypeClusterSkipsAndChangesNothing) {
  for (const char* p : {"shockwave", "shockwave:variant=artifact", "shockwave:mode=lazy"}) {
    SCOPED_TRACE(p);
    const Outcome stepped = run(p, true, true, true);
    const Outcome skipped = run(p, false, true, true);
    expect_same_jobs(stepped.result, skipped.result);
    expect_same_rounds(stepped.result, skipped.result, 2);
    if (std::string(p) == "shockwave")
      EXPECT_LT(skipped.plans, stepped.plans / 100) << skipped.plans << " of " << stepped.plans;
    else
      EXPECT_EQ(skipped.plans, stepped.plans);  // not claimed stable
  }
}

// The non-preemptive policies renew every lease while nothing waits: once
// the other jobs are done, the long job's ~130,000 s alone are planned at no
// point (at most a few points around the events are).
TEST_P(EventCost, RenewingPoliciesPlanOnlyAroundEvents) {
  const std::string& p = GetParam();
  if (p != "fifo" && p != "fifo-backfill" && p != "allox" && p != "yarn-cs") GTEST_SKIP();
  const Outcome stepped = run(p, true, true);
  const Outcome skipped = run(p, false, true);
  EXPECT_GT(stepped.plans, 10000);  // a point every 10 s over ~133,000 s (fast GPU)
  EXPECT_LT(skipped.plans, 50) << "planned " << skipped.plans << " of " << stepped.plans;
}

// A stretch of at least 10^6 stable points with no event is simulated and
// recorded as one round (RoundSample::rounds): a job of 3e6 s alone under
// fifo with 1 s rounds. The run stands for the stepped rounds
// (expect_same_rounds: same points, sums up to round-off) and the jobs come
// out the same, bit for bit (whole seconds: the run's sums are exact).
TEST(EventCostRuns, AMillionStablePointsAreOneRound) {
  const Workload w =
      workload({job("long", "a", "b", 1, 0, 3e6), job("short", "b", "b", 1, 0, 100.0)});
  ClusterModel model = bind_model(toy_cluster({{"slow", 2}, {"fast", 1}}), toy::toy_profiles(), w,
                                  10.0);
  auto run_it = [&](bool stepping) {
    Probe probe(make_round_policy("fifo:round=1", {}), stepping);
    SimOptions o;
    o.sparse_tenant_series = true;
    Outcome r{simulate(model, w, probe, o), 0};
    r.plans = probe.plans;
    return r;
  };
  const Outcome stepped = run_it(true), skipped = run_it(false);
  std::int64_t longest = 0;
  for (const RoundSample& r : skipped.result.rounds) longest = std::max(longest, r.rounds);
  EXPECT_GE(longest, 1000000);
  EXPECT_LT(skipped.result.rounds.size(), 1000u);
  EXPECT_GT(stepped.result.rounds.size(), 1000000u);
  EXPECT_LT(skipped.plans, 50);
  expect_same_jobs(stepped.result, skipped.result);
  expect_same_rounds(stepped.result, skipped.result, 2);
}

// The sparse series (gathered from the tenants a round touches) hold
// exactly the dense series' non-zero tenants.
TEST_P(EventCost, SparseSeriesEqualDense) {
  const Outcome dense = run(GetParam(), false, false);
  const Outcome sparse = run(GetParam(), false, true);
  ASSERT_EQ(dense.result.rounds.size(), sparse.result.rounds.size());
  for (std::size_t i = 0; i < dense.result.rounds.size(); ++i) {
    const RoundSample &d = dense.result.rounds[i], &s = sparse.result.rounds[i];
    ASSERT_TRUE(s.sparse);
    std::vector<double> from_dense, from_sparse;
    for_each_tenant(d, 2, [&](std::size_t t, int active, double tp, const double* g) {
      if (active == 0 && tp == 0 && g[0] == 0 && g[1] == 0) return;
      from_dense.insert(from_dense.end(), {double(t), double(active), tp, g[0], g[1]});
    });
    for_each_tenant(s, 2, [&](std::size_t t, int active, double tp, const double* g) {
      from_sparse.insert(from_sparse.end(), {double(t), double(active), tp, g[0], g[1]});
    });
    EXPECT_EQ(from_dense, from_sparse) << "round " << i;
  }
}

std::string param_name(const testing::TestParamInfo<std::string>& i) {
  std::string n = i.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, EventCost, testing::ValuesIn(round_policy_names()),
                         param_name);
// Settings whose decisions age or whose renewals differ from the executor's
// plain one (synergy's other bases and mode=compat, astraea's demand-capped
// shares): what the policy claims stable must hold for them too.
INSTANTIATE_TEST_SUITE_P(Variants, EventCost,
                         testing::Values("synergy-proportional:base=las",
                                         "synergy-greedy:base=srtf", "synergy-tune:base=ftf",
                                         "synergy-proportional:mode=compat",
                                         "astraea:fair-share=demand"),
                         param_name);

}  // namespace
}  // namespace fairgpu
