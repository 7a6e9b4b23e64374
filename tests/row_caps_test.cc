// Share round policies at tenant level cap every LP row (tenant, job type,
// gang) at the GPUs its active jobs can use, by progressive filling over the
// rows (issue 28, item 2): before, only each tenant's total was capped, so a
// row holding one 4-GPU job was given more than 4 GPUs while its tenant's
// other rows went short, and the estimate counted shares no row could run.
//
// The case, on 24 slow GPUs (6 nodes of 4; toy_model.h, every row's speedup
// on "slow" is 1, so a share of n GPUs is worth n):
//   tenant T (weight 1): row A = one 4-GPU job of type a     (demand 4)
//                        row B = twelve 1-GPU jobs of type b (demand 12)
//   tenant U (weight 1): row C = twenty 1-GPU jobs of type b (demand 20)
// Rows split their tenant's weight: A 1/2, B 1/2, C 1. With one GPU type
// every policy here gives weighted equal shares, so progressive filling is:
//   step 1, 24 GPUs: A 6, B 6, C 12. A exceeds 4: fixed at 4 (4/6 of its
//     share), keeping 4/6 of its weight; the other 1/6 goes to B (2/3).
//   step 2, 20 GPUs, B (2/3) and C (1): B 8, C 12. Nobody exceeds.
// A 4, B 8, C 12: each tenant holds its weighted half. The estimate is what
// these rows run: 24. Capping only tenant totals gave A 6, B 6, C 12 (T's 12
// within its 16), of which A can run 4; capping rows without passing A's
// unused weight to B gives B 6.67, C 13.33 (T below its half).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "fairgpu/policy.h"
#include "fairgpu/scheduler.h"
#include "policy/planned_shares.h"
#include "toy_model.h"

namespace fairgpu {
namespace {

// Shares are LP solutions: gavel's carries ~1e-6 of slack from its
// tolerance; the figures that matter differ by whole GPUs.
constexpr double kTol = 1e-4;

using policy::planned_shares;
using policy::PlannedShare;
using toy::job;

Workload case_workload(bool second_a_arrives) {
  std::vector<JobSpec> jobs = {job("A0", "T", "a", 4, 0, 1e7)};
  for (int i = 0; i < 12; ++i) jobs.push_back(job("B" + std::to_string(i), "T", "b", 1, 0, 1e7));
  for (int i = 0; i < 20; ++i) jobs.push_back(job("C" + std::to_string(i), "U", "b", 1, 0, 1e7));
  if (second_a_arrives) jobs.push_back(job("A1", "T", "a", 4, 300, 1e7));
  return toy::workload(std::move(jobs));
}

ClusterModel case_model(const Workload& w) {
  return bind_model(toy::toy_cluster({{"slow", 4}, {"slow", 4}, {"slow", 4}, {"slow", 4},
                                      {"slow", 4}, {"slow", 4}}),
                    toy::toy_profiles(), w, 10.0);
}

// Row name -> GPUs of its share (all types).
std::map<std::string, double> share_sizes(const std::vector<PlannedShare>& shares) {
  std::map<std::string, double> sizes;
  for (const PlannedShare& s : shares) {
    double size = 0;
    for (double g : s.gpus) size += g;
    sizes[s.row] = size;
  }
  return sizes;
}

// What the rows can run: each row's value W . x with its bundle scaled down
// to the GPUs its jobs can use.
double runnable_throughput(const std::vector<PlannedShare>& shares) {
  double total = 0;
  for (const PlannedShare& s : shares) {
    double value = 0, size = 0;
    for (std::size_t t = 0; t < s.gpus.size(); ++t) {
      value += s.speedup[t] * s.gpus[t];
      size += s.gpus[t];
    }
    total += size > s.usable ? value * s.usable / size : value;
  }
  return total;
}

void admit_all_at(SchedulerState& s, double now) {
  s.now = now;
  for (std::size_t k = 0; k < s.jobs.size(); ++k)
    if (s.jobs[k].state == JobState::kFuture && s.jobs[k].arrival <= now) admit_job(s, k);
}

// A queued job leaves (as if it finished) at s.now.
void leave(SchedulerState& s, const std::string& id) {
  for (std::size_t k = 0; k < s.jobs.size(); ++k) {
    if (s.jobs[k].record.id != id) continue;
    s.jobs[k].state = JobState::kFinished;
    close_job(s, s.jobs[k]);
    s.active.erase(std::find(s.active.begin(), s.active.end(), k));
    s.changed = true;
    return;
  }
  FAIL() << id;
}

TEST(RowCaps, OneGangRowGetsAtMostItsGpusAndTheEstimateIsWhatRowsRun) {
  const Workload w = case_workload(false);
  const ClusterModel model = case_model(w);
  for (const char* spec : {"oef-coop", "oef-noncoop", "gavel:level=tenant", "max-min"}) {
    SCOPED_TRACE(spec);
    SchedulerState s = make_scheduler_state(model, w);
    admit_all_at(s, 0);
    auto p = make_round_policy(spec, {});
    const RoundPlan plan = p->plan(s);
    validate_plan(plan, s);
    const std::vector<PlannedShare> shares = planned_shares(*p);
    const auto size = share_sizes(shares);
    ASSERT_EQ(size.size(), 3u);
    EXPECT_NEAR(size.at("T/a x4"), 4.0, kTol);  // 6 with tenant totals capped only
    EXPECT_NEAR(size.at("T/b x1"), 8.0, kTol);
    EXPECT_NEAR(size.at("U/b x1"), 12.0, kTol);
    EXPECT_NEAR(plan.estimated_throughput, 24.0, kTol);
    EXPECT_NEAR(plan.estimated_throughput, runnable_throughput(shares), kTol);
  }
}

// The case with a second job of type a arriving at 300 s, under `spec`;
// returns the plan after A's first job leaves at 700 s (and B0 at 600 s),
// checked up to there.
class StaleShares : public ::testing::Test {
 protected:
  RoundPlan run_to_700(const char* spec) {
    p_ = make_round_policy(spec, {});
    admit_all_at(s_, 0);
    RoundPlan plan = p_->plan(s_);
    s_.changed = false;
    EXPECT_NEAR(share_sizes(planned_shares(*p_)).at("T/a x4"), 4.0, kTol);

    // 300 s: a second 4-GPU job joins row A (demand 8). A was held at its
    // cap of 4, so the row outgrew it: re-solved at once although no row is
    // new.
    //   step 1, 24 GPUs: A 6 (<= 8), B 6 (<= 12), C 12 (<= 20): nobody over.
    admit_all_at(s_, 300);
    plan = p_->plan(s_);
    s_.changed = false;
    EXPECT_TRUE(plan.recomputed);
    auto size = share_sizes(planned_shares(*p_));
    EXPECT_NEAR(size.at("T/a x4"), 6.0, kTol);
    EXPECT_NEAR(size.at("T/b x1"), 6.0, kTol);
    EXPECT_NEAR(size.at("U/b x1"), 12.0, kTol);
    EXPECT_NEAR(plan.estimated_throughput, 24.0, kTol);

    // 600 s: a job of B leaves; B (11 jobs) can still use its 6: the shares
    // hold without a re-solve.
    plan = plan_after_leaving(600, "B0");
    EXPECT_FALSE(plan.recomputed);
    EXPECT_NEAR(plan.estimated_throughput, 24.0, kTol);

    // 700 s: A's first job leaves; A holds 6 and can use 4.
    return plan_after_leaving(700, "A0");
  }

  // A job leaves at `now`, and the next plan.
  RoundPlan plan_after_leaving(double now, const char* job) {
    s_.now = now;
    leave(s_, job);
    RoundPlan next = p_->plan(s_);
    s_.changed = false;
    return next;
  }

  const Workload w_ = case_workload(true);
  const ClusterModel model_ = case_model(w_);
  SchedulerState s_ = make_scheduler_state(model_, w_);
  std::unique_ptr<RoundPolicy> p_;
};

TEST_F(StaleShares, CappedRowThatOutgrowsItsCapReSolvesAndHeldSharesStayHonest) {
  // oef-coop re-solving for demand changes alone every 900 s, whatever the
  // shares strand (resolve_stranded=1).
  auto& p = p_;
  RoundPlan plan = run_to_700("oef-coop:resolve_stranded=1");
  // 700 s: within 900 s of the last solve the shares are kept (the placer
  // hands the spare GPUs on), but the estimate counts only what A can run:
  // 4 + 6 + 12.
  EXPECT_FALSE(plan.recomputed);
  EXPECT_NEAR(plan.estimated_throughput, 22.0, kTol);
  EXPECT_NEAR(plan.estimated_throughput, runnable_throughput(planned_shares(*p)), kTol);

  // 1200 s, 900 s after the last solve: the next change re-solves, as at 0 s
  // (A 4, its unused weight to B: B 8, C 12).
  plan = plan_after_leaving(1200, "B1");
  EXPECT_TRUE(plan.recomputed);
  const auto size = share_sizes(planned_shares(*p));
  EXPECT_NEAR(size.at("T/a x4"), 4.0, kTol);
  EXPECT_NEAR(size.at("T/b x1"), 8.0, kTol);
  EXPECT_NEAR(size.at("U/b x1"), 12.0, kTol);
  EXPECT_NEAR(plan.estimated_throughput, 24.0, kTol);
}

TEST_F(StaleShares, SharesThatStrandGpusRowsWantReSolveBeforeTheInterval) {
  // The default (resolve_stranded=0.01): at 700 s the 2 GPUs A can no
  // longer use are wanted by B (11 jobs on 6) and C (20 on 12), and 2 > 1%
  // of 24: re-solved at once, as at 0 s (A 4, its unused weight to B).
  const RoundPlan plan = run_to_700("oef-coop");
  EXPECT_TRUE(plan.recomputed);
  const auto size = share_sizes(planned_shares(*p_));
  EXPECT_NEAR(size.at("T/a x4"), 4.0, kTol);
  EXPECT_NEAR(size.at("T/b x1"), 8.0, kTol);
  EXPECT_NEAR(size.at("U/b x1"), 12.0, kTol);
  EXPECT_NEAR(plan.estimated_throughput, 24.0, kTol);
}

}  // namespace
}  // namespace fairgpu
