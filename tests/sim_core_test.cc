// The scheduling core and the simulator (docs/design.md §2, §5): the job progress
// model (restart overhead, renewal, straggler, cross-node), events inside a
// round, OEF's rounding and round-robin, Gavel's priority rounds, conservation
// and determinism. Expected figures are derived in the comments from the toy
// profile (toy_model.h).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include "fairgpu/allocation_io.h"
#include "fairgpu/policy.h"
#include "fairgpu/scenario.h"
#include "fairgpu/sim_report.h"
#include "fairgpu/simulator.h"
#include "toy_model.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

using toy::job;
using toy::rec;
using toy::toy_cluster;
using toy::toy_profiles;
using toy::workload;

SimResult run(const Cluster& cluster, const Workload& w, const std::string& policy,
              const std::string& level = "", double round = 0.0, double horizon = INFINITY) {
  ClusterModel model = bind_model(cluster, toy_profiles(), w, 10.0);
  auto p = make_round_policy(policy, {level, round});
  SimOptions o;
  o.horizon_s = horizon;
  return simulate(model, w, *p, o);
}

TEST(SimCore, RenewedLeaseCostsNothing) {
  // One 1-worker job of type a on one fast GPU: 3000 iterations at 3 it/s
  // = 1000 s after the 10 s restart overhead of its first start; its lease is
  // renewed at 300, 600 and 900 with no further cost.
  auto r = run(toy_cluster({{"fast", 1}}), workload({job("j", "t", "a", 1, 0, 3000)}), "oef-coop");
  const auto& j = rec(r, "j");
  EXPECT_DOUBLE_EQ(j.first_start, 0.0);
  EXPECT_NEAR(j.finish, 1010.0, 1e-6);
  EXPECT_EQ(j.restarts, 0);
  EXPECT_EQ(j.preemptions, 0);
  EXPECT_NEAR(j.attained_gpu_seconds, 1010.0, 1e-6);
  ASSERT_EQ(r.rounds.size(), 4u);
  double busy = 0;
  for (const auto& round : r.rounds) busy += round.busy_gpu_seconds;
  EXPECT_NEAR(busy, 1010.0, 1e-6);
}

TEST(SimCore, StragglerAndCrossNode) {
  // A 2-worker job on one slow and one fast GPU on two nodes runs at the slow
  // type's 2-worker rate 1.8, halved for spanning nodes: 0.9 it/s, so 90
  // iterations take 100 s after the 10 s overhead.
  auto r = run(toy_cluster({{"slow", 1}, {"fast", 1}}), workload({job("j", "t", "a", 2, 0, 90)}),
               "oef-coop");
  const auto& j = rec(r, "j");
  EXPECT_NEAR(j.finish, 110.0, 1e-6);
  EXPECT_EQ(j.cross_type_placements, 1);
  EXPECT_EQ(j.cross_node_placements, 1);
}

TEST(SimCore, CrossNodePenaltyOnlyWhenSpread) {
  // Two fast nodes of 2 GPUs. The 4-worker job must spread: 9.6 x 0.5 = 4.8
  // it/s, 480 iterations in 100 s. Alone, a 2-worker job fits one node at
  // 5.4 it/s: 540 iterations in 100 s.
  auto cluster = toy_cluster({{"fast", 2}, {"fast", 2}});
  auto spread = run(cluster, workload({job("big", "t", "a", 4, 0, 480)}), "oef-coop");
  EXPECT_NEAR(rec(spread, "big").finish, 110.0, 1e-6);
  EXPECT_EQ(rec(spread, "big").cross_node_placements, 1);
  EXPECT_EQ(rec(spread, "big").cross_type_placements, 0);
  auto packed = run(cluster, workload({job("small", "t", "a", 2, 0, 540)}), "oef-coop");
  EXPECT_NEAR(rec(packed, "small").finish, 110.0, 1e-6);
  EXPECT_EQ(rec(packed, "small").cross_node_placements, 0);
}

TEST(SimCore, MidRoundFinishFreesGpusAndArrivalsWaitForTheNextPoint) {
  // The papers' rounds (midround=off). One fast GPU. A (420 iterations) runs
  // 10 + 140 s and finishes at 150, freeing the GPU at once; B arrives at 100
  // and waits for the scheduling point at 300, then needs 10 + 100 s.
  auto r = run(toy_cluster({{"fast", 1}}),
               workload({job("A", "t1", "a", 1, 0, 420), job("B", "t2", "a", 1, 100, 300)}),
               "oef-coop:midround=off");
  EXPECT_NEAR(rec(r, "A").finish, 150.0, 1e-6);
  EXPECT_DOUBLE_EQ(rec(r, "B").first_start, 300.0);
  EXPECT_NEAR(rec(r, "B").finish, 410.0, 1e-6);
  ASSERT_GE(r.rounds.size(), 2u);
  EXPECT_NEAR(r.rounds[0].busy_gpu_seconds, 150.0, 1e-6);
  EXPECT_NEAR(r.rounds[1].busy_gpu_seconds, 110.0, 1e-6);
  auto s = summarise(r);
  EXPECT_NEAR(s.avg_queueing_delay_s, 100.0, 1e-6);  // (0 + 200) / 2
}

TEST(SimCore, AGpuFreedMidRoundGoesAtOnceToTheNextWaitingJobUntilTheRoundEnds) {
  // One fast node of 2 GPUs, 300 s rounds. t1's A1 (420 iterations: 10 +
  // 140 s) and A2 start at 0; A3 waits. A1 finishes at 150: with midround on
  // A3 starts at once under a lease to 300 (off: the GPU idles until 300).
  // t2's B arrives at 200 with no GPU free and waits for the point at 300,
  // where the plan gives each tenant one GPU: B starts and one of t1's two
  // jobs is stopped, the other renewed (no restart).
  const Workload w = workload({job("A1", "t1", "a", 1, 0, 420), job("A2", "t1", "a", 1, 0, 1e6),
                               job("A3", "t1", "a", 1, 0, 1e6), job("B", "t2", "a", 1, 200, 1e6)});
  const auto cluster = toy_cluster({{"fast", 2}});
  auto on = run(cluster, w, "oef-coop", "", 300, 600);
  EXPECT_NEAR(rec(on, "A1").finish, 150.0, 1e-6);
  EXPECT_DOUBLE_EQ(rec(on, "A3").first_start, 150.0);
  EXPECT_DOUBLE_EQ(rec(on, "B").first_start, 300.0);
  EXPECT_EQ(rec(on, "A2").preemptions + rec(on, "A3").preemptions, 1);
  EXPECT_EQ(rec(on, "A2").restarts + rec(on, "A3").restarts, 0);
  // Round 0 kept both GPUs busy once A3 started: 150 + 300 + 150 GPU-seconds.
  ASSERT_GE(on.rounds.size(), 2u);
  EXPECT_NEAR(on.rounds[0].busy_gpu_seconds, 600.0, 1e-6);
  EXPECT_NEAR(on.rounds[0].idle_waiting_gpu_seconds, 0.0, 1e-6);

  auto off = run(cluster, w, "oef-coop:midround=off", "", 300, 600);
  EXPECT_FALSE(rec(off, "A3").first_start < 300.0);
  EXPECT_NEAR(off.rounds[0].busy_gpu_seconds, 450.0, 1e-6);
  EXPECT_NEAR(off.rounds[0].idle_waiting_gpu_seconds, 150.0, 1e-6);

  // Not with less than midround_min of the round left: A1 frees its GPU
  // with half of it left.
  auto late = run(cluster, w, "oef-coop:midround_min=0.6", "", 300, 600);
  EXPECT_FALSE(rec(late, "A3").first_start < 300.0);
}

TEST(SimCore, ContendedTimeIsTheTimeSomeJobWaitsNotTheRestOfTheRound) {
  // The rounds of the test above. Midround on: A3 waits from 0 until A1's
  // GPU frees at 150, B from its arrival at 200 to the round's end: 150 +
  // 100 s of round 0 are contended, not all 300. Off: A3 waits all round.
  const Workload w = workload({job("A1", "t1", "a", 1, 0, 420), job("A2", "t1", "a", 1, 0, 1e6),
                               job("A3", "t1", "a", 1, 0, 1e6), job("B", "t2", "a", 1, 200, 1e6)});
  const auto cluster = toy_cluster({{"fast", 2}});
  auto on = run(cluster, w, "oef-coop", "", 300, 600);
  ASSERT_GE(on.rounds.size(), 1u);
  EXPECT_NEAR(on.rounds[0].contended_s, 250.0, 1e-6);
  // Busy GPUs while contended: 2 from 0 to 150 (A1, A2), 2 from 200 to 300.
  EXPECT_NEAR(on.rounds[0].contended_busy_gpu_seconds, 500.0, 1e-6);
  auto off = run(cluster, w, "oef-coop:midround=off", "", 300, 600);
  EXPECT_NEAR(off.rounds[0].contended_s, 300.0, 1e-6);

  // An arrival that a mid-round start places at once never waits: B arrives
  // at 100 with a GPU free and starts, so round 0 has no contended time.
  auto quiet =
      run(cluster, workload({job("A", "t1", "a", 1, 0, 1e6), job("B", "t2", "a", 1, 100, 1e6)}),
          "oef-coop", "", 300, 600);
  EXPECT_DOUBLE_EQ(rec(quiet, "B").first_start, 100.0);
  ASSERT_GE(quiet.rounds.size(), 1u);
  EXPECT_EQ(quiet.rounds[0].contended_s, 0.0);
  EXPECT_EQ(quiet.rounds[0].contended_throughput, 0.0);
}

TEST(SimCore, ArrivalsStartedMidRoundFollowTheTenantsWeights) {
  // One fast node of 8 GPUs, 300 s rounds. C's job runs from 0 on one GPU;
  // at 10 alice (weight 3) and bob (weight 1) each submit eight 1-GPU jobs,
  // rows with no share yet. The next plan would give alice 8 x 3/5 = 4.8
  // GPUs and bob 1.6 (C's weight 1 counts too): of the 7 free GPUs alice's
  // jobs take 5 at once and bob's 2, not 4 and 3 as counting workers did.
  std::vector<JobSpec> jobs{job("C", "c", "a", 1, 0, 1e6)};
  for (int i = 0; i < 8; ++i) {
    jobs.push_back(job("A" + std::to_string(i), "alice", "a", 1, 10, 1e6));
    jobs.push_back(job("B" + std::to_string(i), "bob", "a", 1, 10, 1e6));
  }
  Workload w = workload(jobs);
  for (TenantSpec& t : w.tenants) t.weight = t.name == "alice" ? 3.0 : 1.0;
  auto r = run(toy_cluster({{"fast", 8}}), w, "oef-coop", "", 300, 300);
  int alice = 0, bob = 0;
  for (const JobRecord& j : r.jobs) {
    if (!(j.first_start == 10.0)) continue;
    alice += j.tenant == "alice";
    bob += j.tenant == "bob";
  }
  EXPECT_EQ(alice, 5);
  EXPECT_EQ(bob, 2);
}

TEST(SimCore, MidRoundStartsGoToTheRowFurthestBelowItsShare) {
  // One fast node of 3 GPUs. t1 has three jobs, t2 two; at 0 the plan gives
  // t1 2 GPUs and t2 1 (1.5 each, rounded), or the other way. The first
  // job to finish is t1's T1a (at 10 + 140 = 150 s): its GPU goes to t2's
  // waiting job when t2 is the row below its share, else to t1's.
  const Workload w = workload({job("T1a", "t1", "a", 1, 0, 420), job("T1b", "t1", "a", 1, 0, 1e6),
                               job("T1c", "t1", "a", 1, 0, 1e6), job("T2a", "t2", "a", 1, 0, 1e6),
                               job("T2b", "t2", "a", 1, 0, 1e6)});
  auto r = run(toy_cluster({{"fast", 3}}), w, "oef-coop", "", 300, 300);
  ASSERT_NEAR(rec(r, "T1a").finish, 150.0, 1e-6);
  // Who ran from 0: t1 held 2 (T1a and one more) or 1 (T1a alone).
  const int t2_at_zero = (rec(r, "T2a").first_start == 0.0) + (rec(r, "T2b").first_start == 0.0);
  ASSERT_TRUE(t2_at_zero == 1 || t2_at_zero == 0) << "T1a runs from 0";
  if (t2_at_zero == 1) {
    // t1 held 2 of its 1.5, t2 1 of its 1.5: t2's second job starts at 150.
    EXPECT_DOUBLE_EQ(std::max(rec(r, "T2a").first_start, rec(r, "T2b").first_start), 150.0);
  } else {
    FAIL() << "the plan gave T1a's tenant all three GPUs";
  }
}

TEST(SimCore, AGangThatFitsNoNodeMidRoundRunsSpreadOnGpusNoOneElseTakes) {
  // Four fast nodes of 1 GPU, 300 s rounds. t1's four 1-worker jobs hold
  // them from 0; X1 and X2 (420 iterations) finish at 10 + 140 = 150 s. t2's
  // 2-worker gang G arrives at 5. No node will ever hold it whole, so at 150
  // it runs spread over the two freed GPUs (the second pass of mid-round
  // starts, as spread_idle lets the round's placer); without mid-round
  // starts, or with spread_idle off, the GPUs idle until the point at 300.
  const Workload w = workload({job("X1", "t1", "a", 1, 0, 420), job("X2", "t1", "a", 1, 0, 420),
                               job("X3", "t1", "a", 1, 0, 1e6), job("X4", "t1", "a", 1, 0, 1e6),
                               job("G", "t2", "a", 2, 5, 1e6)});
  const auto cluster = toy_cluster({{"fast", 1}, {"fast", 1}, {"fast", 1}, {"fast", 1}});
  auto on = run(cluster, w, "oef-coop", "", 300, 600);
  ASSERT_NEAR(rec(on, "X1").finish, 150.0, 1e-6);
  ASSERT_NEAR(rec(on, "X2").finish, 150.0, 1e-6);
  EXPECT_DOUBLE_EQ(rec(on, "G").first_start, 150.0);
  EXPECT_GE(rec(on, "G").cross_node_placements, 1);
  EXPECT_NEAR(on.rounds[0].idle_waiting_gpu_seconds, 0.0, 1e-6);

  for (const char* without : {"oef-coop:midround=off", "oef-coop:spread_idle=off"}) {
    auto r = run(cluster, w, without, "", 300, 600);
    EXPECT_FALSE(rec(r, "G").first_start < 300.0) << without;
    EXPECT_NEAR(r.rounds[0].idle_waiting_gpu_seconds, 300.0, 1e-6) << without;  // 2 x 150
  }
}

TEST(SimCore, AGangWithNoTypeOfItsOwnFreeMidRoundRunsOverAdjacentTypes) {
  // A fast and a slow node of 1 GPU, 600 s rounds. t1's X1 and X2 (270
  // iterations) run from 0: on fast it ends at 10 + 90 = 100, on slow at
  // 10 + 270 = 280. t2's 2-worker gang G arrives at 5. At 100 one fast GPU
  // is not enough; at 280 both are free, and G runs over both types at the
  // slow type's spread rate (1.8 x 0.5 it/s) until the point at 600.
  const Workload w = workload({job("X1", "t1", "a", 1, 0, 270), job("X2", "t1", "a", 1, 0, 270),
                               job("G", "t2", "a", 2, 5, 1e6)});
  auto r = run(toy_cluster({{"fast", 1}, {"slow", 1}}), w, "oef-coop", "", 600, 900);
  ASSERT_NEAR(std::max(rec(r, "X1").finish, rec(r, "X2").finish), 280.0, 1e-6);
  EXPECT_DOUBLE_EQ(rec(r, "G").first_start, 280.0);
  EXPECT_GE(rec(r, "G").cross_type_placements, 1);
}

TEST(SimCore, TimeSharingGangsGoWhereTheirRateIsBestNotTheFastestType) {
  // Two fast nodes of 3 GPUs and a slow node of 2; spread over nodes a gang
  // of type a runs at 0.3 x its one-node rate here. Two 2-worker fillers
  // take 2 GPUs of each fast node (best fit), leaving one free on each. The
  // 2-worker gang G (180 iterations) then gets the fast type spread, 5.4 x
  // 0.3 = 1.62 it/s, or the slow node whole, 1.8 it/s: it goes to the slow
  // node (10 + 100 s), not to the faster type spread.
  ProfileCatalogue profiles = toy_profiles();
  profiles.job_types[0].cross_node_factor = 0.3;
  const Workload w = workload({job("F1", "t1", "a", 2, 0, 1e6), job("F2", "t1", "a", 2, 0, 1e6),
                               job("G", "t2", "a", 2, 5, 180)});
  const ClusterModel model =
      bind_model(toy_cluster({{"fast", 3}, {"fast", 3}, {"slow", 2}}), profiles, w, 10.0);
  auto policy = make_round_policy("fifo", {});
  SimOptions o;
  o.horizon_s = 600;
  const SimResult r = simulate(model, w, *policy, o);
  EXPECT_EQ(rec(r, "F1").cross_node_placements + rec(r, "F2").cross_node_placements, 0);
  const auto& g = rec(r, "G");
  EXPECT_EQ(g.cross_node_placements, 0);
  EXPECT_NEAR(g.finish - g.first_start, 110.0, 1e-6);
}

TEST(SimCore, ATimeSharingGangWaitsForOneNodeRatherThanRunSpreadAtHalfItsRate) {
  // Two fast nodes of 3 GPUs; FIFO, a point every 10 s. Fillers F1 (2
  // workers, long) and F2 (486 iterations at 5.4 it/s: 10 + 90 s) take 2
  // GPUs of each node (best fit), one free on each. The gang G (540
  // iterations) arrives at 5: spread it would run at 5.4 x 0.5 it/s, below
  // spread_min (0.9) of its one-node 5.4, so it waits; F2 ends at 100 and G
  // gets a node whole (10 + 100 s). With spread_min=0 it starts spread at
  // the first point; with spread_wait=50 it takes the spread placement once
  // it has waited 50 s (the point at 60).
  const Workload w = workload({job("F1", "t1", "a", 2, 0, 1e6), job("F2", "t1", "a", 2, 0, 486),
                               job("G", "t2", "a", 2, 5, 540)});
  const ClusterModel model = bind_model(toy_cluster({{"fast", 3}, {"fast", 3}}), toy_profiles(), w, 10.0);
  auto run_fifo = [&](const std::string& spec) {
    auto policy = make_round_policy(spec, {});
    SimOptions o;
    o.horizon_s = 600;
    return simulate(model, w, *policy, o);
  };
  const SimResult waits = run_fifo("fifo");
  ASSERT_NEAR(rec(waits, "F2").finish, 100.0, 1e-6);
  EXPECT_DOUBLE_EQ(rec(waits, "G").first_start, 100.0);
  EXPECT_EQ(rec(waits, "G").cross_node_placements, 0);
  EXPECT_NEAR(rec(waits, "G").finish, 210.0, 1e-6);

  const SimResult any = run_fifo("fifo:spread_min=0");
  EXPECT_DOUBLE_EQ(rec(any, "G").first_start, 10.0);
  EXPECT_GE(rec(any, "G").cross_node_placements, 1);

  const SimResult bounded = run_fifo("fifo:spread_wait=50");
  EXPECT_DOUBLE_EQ(rec(bounded, "G").first_start, 60.0);
  EXPECT_GE(rec(bounded, "G").cross_node_placements, 1);
}

TEST(SimCore, ATimeSharingGangTakesASlowerTypesWholeNodeRatherThanWait) {
  // Two fast nodes of 3 GPUs with one free each (fillers as above) and a
  // slow node of 2. Spread over the fast nodes the gang G would run at 5.4 x
  // 0.5 = 2.7 it/s, faster than the slow node's 1.8 but below spread_min of
  // its fast one-node 5.4: it does not wait for a fast node, it takes the
  // slow node whole from the first point (10 + 180 / 1.8 = 110 s).
  const Workload w = workload({job("F1", "t1", "a", 2, 0, 1e6), job("F2", "t1", "a", 2, 0, 1e6),
                               job("G", "t2", "a", 2, 5, 180)});
  const ClusterModel model = bind_model(
      toy_cluster({{"fast", 3}, {"fast", 3}, {"slow", 2}}), toy_profiles(), w, 10.0);
  auto policy = make_round_policy("fifo", {});
  SimOptions o;
  o.horizon_s = 600;
  const SimResult r = simulate(model, w, *policy, o);
  const auto& g = rec(r, "G");
  EXPECT_DOUBLE_EQ(g.first_start, 10.0);
  EXPECT_EQ(g.cross_node_placements, 0);
  EXPECT_NEAR(g.finish, 120.0, 1e-6);
}

TEST(SimCore, FinishedJobsLeaveTheListsAtCompactOnly) {
  // Two fast GPUs: A (420 iterations) finishes at 10 + 140 = 150 s, B (3000)
  // at 10 + 1000 = 1010 s. run_events() finishes jobs but leaves them in
  // running/active until compact() (the event loop compacts once per round,
  // not once per event); settle_all() and advance() compact first.
  // Weights 0.1 and 0.2: their sum minus both is 5.6e-17, not 0, in doubles.
  Workload w =
      workload({job("A", "t1", "a", 1, 0, 420, 0.1), job("B", "t2", "a", 1, 0, 3000, 0.2)});
  ClusterModel m = bind_model(toy_cluster({{"fast", 2}}), toy_profiles(), w, 10.0);
  SchedulerState s = make_scheduler_state(m, w);
  SimulatedExecutor ex(nullptr);
  admit_job(s, 0);
  admit_job(s, 1);
  RoundPlan plan;
  plan.run.push_back({0, {DeviceRef{0, 0}}, 2000.0});
  plan.run.push_back({1, {DeviceRef{0, 1}}, 2000.0});
  ex.apply(plan, s);
  EXPECT_EQ(ex.run_events(s, 200.0), 1u);
  EXPECT_EQ(s.jobs[0].state, JobState::kFinished);
  EXPECT_NEAR(s.jobs[0].record.finish, 150.0, 1e-9);
  EXPECT_EQ(s.active, (std::vector<std::size_t>{0, 1}));  // not yet compacted
  EXPECT_EQ(s.running, (std::vector<std::size_t>{0, 1}));
  EXPECT_NEAR(s.active_weight, 0.2, 1e-12);  // but no longer counted
  const double attained = s.jobs[0].record.attained_gpu_seconds;
  EXPECT_NEAR(attained, 150.0, 1e-9);
  ex.settle_all(s);  // compacts: the finished job is not settled past its finish
  EXPECT_DOUBLE_EQ(s.jobs[0].record.attained_gpu_seconds, attained);
  EXPECT_EQ(s.active, (std::vector<std::size_t>{1}));
  EXPECT_EQ(s.running, (std::vector<std::size_t>{1}));
  EXPECT_EQ(ex.run_events(s, 2000.0), 1u);
  EXPECT_EQ(s.active_weight, 0.0);  // nothing left active: no drift, before compact()
  EXPECT_EQ(s.active.size(), 1u);
  ex.compact(s);
  EXPECT_TRUE(s.active.empty());
  EXPECT_TRUE(s.running.empty());
  EXPECT_EQ(ex.run_events(s, 3000.0), 0u);
}

TEST(SimCore, RoundRobinInsideATenantPaysRestartOverhead) {
  // One tenant, two 1-worker jobs, one fast GPU: the tenant's share is the
  // GPU and its jobs take turns, longest starvation first (OEF §6.1.3). Each
  // turn is 10 s overhead + 290 s at 3 it/s = 870 iterations; with 1740
  // iterations each, A runs rounds 0 and 2 (finishing at 900), B rounds 1 and
  // 3 (finishing at 1200). (keep_finishing off: by default A, which would
  // finish 290 s into round 1, keeps the GPU: A at 590, B at 1190.)
  auto r = run(toy_cluster({{"fast", 1}}),
               workload({job("A", "t", "a", 1, 0, 1740), job("B", "t", "a", 1, 0, 1740)}),
               "oef-coop:quantum=0:keep_finishing=off");
  EXPECT_NEAR(rec(r, "A").finish, 900.0, 1e-6);
  EXPECT_NEAR(rec(r, "B").finish, 1200.0, 1e-6);
  EXPECT_EQ(rec(r, "A").restarts, 1);
  EXPECT_EQ(rec(r, "A").preemptions, 1);
  EXPECT_EQ(rec(r, "B").restarts, 1);
}

TEST(SimCore, OefRoundingAlternatesHalfShares) {
  // Two tenants, equal weights and speedups, one GPU: each ideal share is 0.5.
  // floor(0.5) = 0 for both (small-share rule); the GPU left over goes to the
  // larger deficit, the holder being renewed in place on a tie (no restart),
  // so the deviations make them take turns: A B B A A B B A A B.
  auto r = run(toy_cluster({{"fast", 1}}),
               workload({job("A", "t1", "a", 1, 0, 1e6), job("B", "t2", "a", 1, 0, 1e6)}),
               "oef-coop:quantum=0", "", 300, 3000);
  ASSERT_EQ(r.rounds.size(), 10u);
  const int expected[10] = {0, 1, 1, 0, 0, 1, 1, 0, 0, 1};
  for (std::size_t i = 0; i < r.rounds.size(); ++i) {
    const auto& g = r.rounds[i].tenant_gpus;  // tenant-major x 2 types
    EXPECT_DOUBLE_EQ(g[0 * 2 + 1] + g[1 * 2 + 1], 1.0) << "round " << i;
    EXPECT_DOUBLE_EQ(g[static_cast<std::size_t>(expected[i]) * 2 + 1], 1.0) << "round " << i;
  }
  EXPECT_NEAR(rec(r, "A").attained_gpu_seconds, 1500.0, 1e-6);
  EXPECT_NEAR(rec(r, "B").attained_gpu_seconds, 1500.0, 1e-6);
}

TEST(SimCore, OefRoundingTracksTheFractionalAllocationOverTime) {
  // Two tenants on 3 slow + 3 fast GPUs (one node of each): t1 runs type a
  // (speedup 3), t2 type b (speedup 1.5). Over many rounds each tenant's
  // average GPUs per type must match oef-coop's fractional allocation for the
  // same problem within one GPU-round per 40 rounds.
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 6; ++i) {
    jobs.push_back(job("a" + std::to_string(i), "t1", "a", 1, 0, 1e9));
    jobs.push_back(job("b" + std::to_string(i), "t2", "b", 1, 0, 1e9));
  }
  const int rounds = 40;
  auto r = run(toy_cluster({{"slow", 3}, {"fast", 3}}), workload(jobs), "oef-coop:quantum=0", "", 300,
               300.0 * rounds);
  ShareProblem p;
  p.gpu_types = {"slow", "fast"};
  p.capacity = {3, 3};
  p.add_tenant("t1", {1, 3}, 1, 6);
  p.add_tenant("t2", {1, 1.5}, 1, 6);
  Matrix x = make_share_policy("oef-coop")->allocate(p);
  ASSERT_EQ(r.rounds.size(), static_cast<std::size_t>(rounds));
  for (std::size_t tenant = 0; tenant < 2; ++tenant)
    for (std::size_t t = 0; t < 2; ++t) {
      double sum = 0;
      for (const auto& round : r.rounds) sum += round.tenant_gpus[tenant * 2 + t];
      EXPECT_NEAR(sum / rounds, x(tenant, t), 1.0 / rounds) << "tenant " << tenant << " type " << t;
    }
  // The share is not trivial: somebody holds a fraction of a type.
  bool fractional = false;
  for (std::size_t e = 0; e < 2; ++e)
    for (std::size_t t = 0; t < 2; ++t) fractional |= std::fabs(x(e, t) - std::round(x(e, t))) > 0.1;
  EXPECT_TRUE(fractional);
}

TEST(SimCore, GavelPriorityRoundsFollowWeightedTimeFractions) {
  // Job level, one fast GPU, two long jobs with priority weights 2 and 1:
  // Gavel's allocation gives them 2/3 and 1/3 of the time; its priority rule
  // realises that within a round over 30 rounds.
  auto r = run(toy_cluster({{"fast", 1}}),
               workload({job("A", "t1", "a", 1, 0, 1e9, 2.0), job("B", "t2", "a", 1, 0, 1e9)}),
               "gavel", "job", 360, 360.0 * 30);
  EXPECT_EQ(r.level, "job");
  double a = rec(r, "A").attained_gpu_seconds, b = rec(r, "B").attained_gpu_seconds;
  EXPECT_NEAR(a + b, 360.0 * 30, 1e-6);
  EXPECT_NEAR(a, 360.0 * 20, 360.0);
  EXPECT_NEAR(b, 360.0 * 10, 360.0);
}

TEST(SimCore, ACappedTenantThatGrowsGetsItsShareAtTheNextRound) {
  // Six fast GPUs, equal weights. At 0, t1 has one job (demand 1, so it is
  // capped at 1) and t2 six. At 300, t1 submits five more: its fair share is
  // now 3. Demand changes alone may wait `resolve` (900 s) for a re-solve,
  // but not a capped tenant that can now use more than its bundle: held at
  // 1 GPU, it got only what t2 left (nothing) until 900.
  std::vector<JobSpec> jobs{job("t1-0", "t1", "a", 1, 0, 1e6)};
  for (int i = 0; i < 6; ++i) jobs.push_back(job("t2-" + std::to_string(i), "t2", "a", 1, 0, 1e6));
  for (int i = 1; i <= 5; ++i)
    jobs.push_back(job("t1-" + std::to_string(i), "t1", "a", 1, 300, 1e6));
  auto r = run(toy_cluster({{"fast", 6}}), workload(jobs), "oef-coop:quantum=0", "", 300, 1200);
  ASSERT_EQ(r.rounds.size(), 4u);
  const auto fast = [&](std::size_t round, std::size_t tenant) {
    return r.rounds[round].tenant_gpus[tenant * 2 + 1];  // tenant-major x (slow, fast)
  };
  EXPECT_DOUBLE_EQ(fast(0, 0), 1.0);
  EXPECT_DOUBLE_EQ(fast(0, 1), 5.0);
  for (std::size_t round = 1; round < 4; ++round) {
    EXPECT_DOUBLE_EQ(fast(round, 0), 3.0) << "round " << round;
    EXPECT_DOUBLE_EQ(fast(round, 1), 3.0) << "round " << round;
  }
}

TEST(SimCore, ProgressiveFillingSurvivesCappedLevels) {
  // A snapshot the simulator produced with --tenant-demands: twelve tenants,
  // most capped at 1-5 GPUs. Levels re-imposed with too little slack made the
  // bottleneck LP infeasible.
  ShareProblem p =
      read_share_problem(std::string(FAIRGPU_SOURCE_DIR) + "/tests/data/gavel-capped-levels.json");
  for (const char* name : {"gavel", "oef-noncoop", "max-min"}) {
    Matrix x = make_share_policy(name)->allocate(p);
    EXPECT_EQ(check_feasible(p, x), "") << name;
  }
}

// A policy with Astraea's shape (lease 900 s decided at 10 s intervals):
// it starts every queued job on the first free GPU and never names running
// jobs, so a job keeps its GPU until its lease ends, then is preempted unless
// renewed. Counts the scheduling points it saw.
class LeasePolicy final : public RoundPolicy {
 public:
  explicit LeasePolicy(bool renew) : renew_(renew) {}
  std::string_view name() const override { return "test-lease"; }
  double interval() const override { return 10.0; }
  RoundPlan plan(const SchedulerState& s) override {
    ++points;
    RoundPlan p;
    std::vector<bool> used(s.device_owner.size(), false);
    for (std::size_t i : s.running)
      if (!s.lease_ended(s.jobs[i]))
        for (DeviceRef d : s.jobs[i].devices) used[s.flat(d)] = true;
    for (std::size_t i : s.active) {
      const Job& j = s.jobs[i];
      if (j.state == JobState::kRunning && !s.lease_ended(j)) continue;
      if (j.state == JobState::kRunning) {  // its lease ended: renew or let it go
        if (!renew_) continue;
        p.run.push_back({i, j.devices, s.now + 900.0});
        for (DeviceRef d : j.devices) used[s.flat(d)] = true;
        continue;
      }
      for (std::uint32_t g = 0; g < used.size(); ++g)
        if (!used[g]) {
          used[g] = true;
          p.run.push_back({i, {{0, g}}, s.now + 900.0});
          break;
        }
    }
    return p;
  }
  int points = 0;

 private:
  bool renew_;
};

TEST(SimCore, LeasesOutliveSchedulingIntervals) {
  // One fast GPU, two 1-worker jobs of 3000 s of work each (9000 iterations
  // at 3 it/s), arriving together. A holds the GPU for its whole 900 s lease
  // although the policy is asked every 10 s; without renewal B takes over at
  // 900, A at 1800 (restart), ...; with renewal A keeps it to the end.
  Cluster c = toy_cluster({{"fast", 1}});
  Workload w = workload({job("A", "t", "a", 1, 0, 9000), job("B", "t", "a", 1, 0, 9000)});
  ClusterModel model = bind_model(c, toy_profiles(), w, 10.0);

  LeasePolicy rotate(false);
  SimResult r = simulate(model, w, rotate);
  // A: 0-900 (890 s of work after the start), 1800-2700 (890), 3600-4500
  // (890), 5400-5740 (10 + 330): 3000 s of work in 4 runs.
  EXPECT_NEAR(rec(r, "A").finish, 5740.0, 1e-6);
  EXPECT_EQ(rec(r, "A").restarts, 3);
  EXPECT_EQ(rec(r, "A").preemptions, 3);
  // B starts at 900 and, once A is done, runs on from 6300 without a gap.
  EXPECT_DOUBLE_EQ(rec(r, "B").first_start, 900.0);
  EXPECT_GT(rotate.points, 500);  // asked every 10 s, decided only at lease ends

  LeasePolicy keep(true);
  SimResult k = simulate(model, w, keep);
  EXPECT_NEAR(rec(k, "A").finish, 3010.0, 1e-6);  // renewed at 900, 1800, 2700: no cost
  EXPECT_EQ(rec(k, "A").restarts, 0);
  EXPECT_DOUBLE_EQ(rec(k, "B").first_start, 3010.0);  // A frees the GPU at a scheduling point
}

TEST(SimCore, InvalidPlansAreCaught) {
  Cluster c = toy_cluster({{"fast", 2}});
  Workload w = workload({job("A", "t", "a", 1, 0, 10), job("B", "t", "a", 1, 0, 10)});
  ClusterModel model = bind_model(c, toy_profiles(), w, 10.0);
  SchedulerState s = make_scheduler_state(model, w);
  for (auto& j : s.jobs) j.state = JobState::kQueued;
  s.active = {0, 1};
  RoundPlan twice;
  twice.run = {{0, {{0, 0}}, 300}, {1, {{0, 0}}, 300}};
  EXPECT_THROW(validate_plan(twice, s), std::logic_error);
  RoundPlan named_twice;  // the repeat found after other jobs were checked
  named_twice.run = {{1, {{0, 1}}, 300}, {0, {{0, 0}}, 300}, {1, {{0, 1}}, 300}};
  EXPECT_THROW(
      try { validate_plan(named_twice, s); } catch (const std::logic_error& e) {
        EXPECT_STREQ(e.what(), "invalid round plan: job B named twice");
        throw;
      },
      std::logic_error);
  RoundPlan wrong_gang;
  wrong_gang.run = {{0, {{0, 0}, {0, 1}}, 300}};
  EXPECT_THROW(validate_plan(wrong_gang, s), std::logic_error);
  RoundPlan no_such_device;
  no_such_device.run = {{0, {{0, 5}}, 300}};
  EXPECT_THROW(validate_plan(no_such_device, s), std::logic_error);
  RoundPlan ok;
  ok.run = {{0, {{0, 0}}, 300}, {1, {{0, 1}}, 300}};
  EXPECT_NO_THROW(validate_plan(ok, s));
}

// Where gangs keep to one node (the Slurm backend), a gang over two nodes is
// an invalid plan; elsewhere it is a valid (spread) one.
TEST(SimCore, ASpreadGangIsCaughtWhereGangsKeepToOneNode) {
  Cluster c = toy_cluster({{"fast", 2}, {"fast", 2}});
  Workload w = workload({job("A", "t", "a", 2, 0, 10)});
  for (bool one_node : {false, true}) {
    c.gangs_on_one_node = one_node;
    ClusterModel model = bind_model(c, toy_profiles(), w, 10.0);
    SchedulerState s = make_scheduler_state(model, w);
    s.jobs[0].state = JobState::kQueued;
    s.active = {0};
    RoundPlan on_one, spread;
    on_one.run = {{0, {{1, 0}, {1, 1}}, 300}};
    spread.run = {{0, {{0, 1}, {1, 0}}, 300}};
    EXPECT_NO_THROW(validate_plan(on_one, s));
    if (!one_node) {
      EXPECT_NO_THROW(validate_plan(spread, s));
      continue;
    }
    EXPECT_THROW(
        try { validate_plan(spread, s); } catch (const std::logic_error& e) {
          EXPECT_STREQ(e.what(),
                       "invalid round plan: job A spread over nodes where a gang keeps to one");
          throw;
        },
        std::logic_error);
  }
}

// Where gangs spread only evenly (serve on Slurm), a gang that no type's
// nodes can hold so is bad input, named, rather than a job that waits for
// ever: 4 GPUs on nodes of 3, 1 and 1 (5 in all) are neither one node, nor
// 2 + 2, nor 1 + 1 + 1 + 1. Elsewhere it runs spread 3 + 1.
TEST(SimCore, AGangNoEvenSpreadHoldsIsBadInputWhereGangsSpreadEvenly) {
  Cluster c = toy_cluster({{"fast", 3}, {"fast", 1}, {"fast", 1}});
  const Workload w = workload({job("G", "t", "a", 4, 0, 10)});
  EXPECT_NO_THROW(bind_model(c, toy_profiles(), w, 10.0));
  c.gangs_spread_evenly = true;
  EXPECT_THROW(
      try { bind_model(c, toy_profiles(), w, 10.0); } catch (const InputError& e) {
        EXPECT_STREQ(e.what(),
                     "trace: job G: workers: 'a' with 4 workers: the cluster spreads a gang only "
                     "evenly (the same number of GPUs on each node, one type), and no type the "
                     "job runs on has nodes that hold 4 so");
        throw;
      },
      InputError);
  // 2 + 2 holds it.
  c.nodes[1].gpus = 2;
  EXPECT_NO_THROW(bind_model(c, toy_profiles(), w, 10.0));
}

TEST(SimCore, HoldsGangEvenly) {
  EXPECT_TRUE(holds_gang_evenly({4}, 4));           // one node
  EXPECT_TRUE(holds_gang_evenly({2, 2}, 4));        // 2 + 2
  EXPECT_TRUE(holds_gang_evenly({1, 1, 1}, 3));     // 1 + 1 + 1
  EXPECT_FALSE(holds_gang_evenly({3, 1, 1}, 4));    // 5 GPUs, no even spread
  EXPECT_FALSE(holds_gang_evenly({2, 2, 2, 2}, 5)); // 5 needs five nodes of 1
  EXPECT_TRUE(holds_gang_evenly({2, 2, 2}, 6));     // 2 + 2 + 2
  EXPECT_FALSE(holds_gang_evenly({4, 2}, 6));       // not 6 on one, not 3 + 3, not 2 + 2 + 2
  EXPECT_TRUE(holds_gang_evenly({8, 2}, 6));        // 6 on the 8
  EXPECT_FALSE(holds_gang_evenly({}, 1));
}

// A generated workload on the built-in cluster.
ScenarioOptions generated_scenario(int jobs, int tenants, double arrivals_per_hour,
                                   std::uint64_t seed) {
  ScenarioOptions o;
  o.generator = default_generator_options();
  o.generator.jobs = jobs;
  o.generator.tenants = tenants;
  o.generator.arrivals_per_hour = arrivals_per_hour;
  o.seed = seed;
  return o;
}

// The simulator settles a round on a second thread while the next one is
// planned when the policy does not read progress (oef-coop at tenant level):
// the run is the same, round by round, as with the settling in line (a
// wrapper that says the policy reads progress), with and without a horizon
// that cuts the last round short.
class SettlesInLine final : public RoundPolicy {
 public:
  explicit SettlesInLine(RoundPolicy& inner) : inner_(inner) {}
  std::string_view name() const override { return inner_.name(); }
  std::string_view level() const override { return inner_.level(); }
  double interval() const override { return inner_.interval(); }
  RoundPlan plan(const SchedulerState& s) override { return inner_.plan(s); }
  bool reads_progress() const override { return true; }
  std::vector<Assignment> midround(const SchedulerState& s, const std::vector<DeviceRef>& free,
                                   double round_end) override {
    return inner_.midround(s, free, round_end);
  }
  bool starts_midround() const override { return inner_.starts_midround(); }

 private:
  RoundPolicy& inner_;
};

TEST(SimCore, SettlingBesideThePlanChangesNothing) {
  Scenario sc = load_scenario(generated_scenario(80, 5, 30, 11));
  EXPECT_TRUE(make_round_policy("oef-coop", {"job", 0})->reads_progress());
  // keep_finishing reads the running jobs' progress (settled in line).
  EXPECT_TRUE(make_round_policy("oef-coop", {"tenant", 0})->reads_progress());
  for (double horizon : {double(INFINITY), 20 * 3600.0 + 100.0}) {
    SimOptions options;
    options.horizon_s = horizon;
    auto beside = make_round_policy("oef-coop:keep_finishing=off", {"tenant", 0});
    ASSERT_FALSE(beside->reads_progress());
    SimResult a = simulate(sc.model, sc.workload, *beside, options);
    auto inner = make_round_policy("oef-coop:keep_finishing=off", {"tenant", 0});
    SettlesInLine in_line(*inner);
    SimResult b = simulate(sc.model, sc.workload, in_line, options);
    ASSERT_GT(a.rounds.size(), 20u);
    ASSERT_EQ(a.rounds.size(), b.rounds.size());
    for (std::size_t r = 0; r < a.rounds.size(); ++r) {
      const RoundSample &x = a.rounds[r], &y = b.rounds[r];
      EXPECT_EQ(x.start, y.start) << r;
      EXPECT_EQ(x.end, y.end) << r;
      EXPECT_EQ(x.busy_gpu_seconds, y.busy_gpu_seconds) << r;
      EXPECT_EQ(x.throughput_integral, y.throughput_integral) << r;
      EXPECT_EQ(x.contended_s, y.contended_s) << r;
      EXPECT_EQ(x.contended_throughput, y.contended_throughput) << r;
      EXPECT_EQ(x.idle_waiting_gpu_seconds, y.idle_waiting_gpu_seconds) << r;
      EXPECT_EQ(x.tenant_throughput, y.tenant_throughput) << r;
      EXPECT_EQ(x.tenant_gpus, y.tenant_gpus) << r;
      EXPECT_EQ(x.tenant_active_jobs, y.tenant_active_jobs) << r;
    }
    EXPECT_EQ(jobs_csv(a), jobs_csv(b));
    EXPECT_EQ(tenants_csv(a), tenants_csv(b));
  }
}

// A generated workload on the built-in cluster under every share policy at
// both levels: every job finishes with exactly its work done, no round is
// busier than the cluster, GPU time adds up, and two runs are identical.
class Conservation : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  // 60 generated jobs from 6 tenants on the built-in cluster.
  static ScenarioOptions small_scenario() { return generated_scenario(60, 6, 20, 7); }
};

TEST_P(Conservation, WorkCapacityAndDeterminism) {
  auto [policy, level] = GetParam();
  ScenarioOptions o = small_scenario();
  Scenario sc = load_scenario(o);
  auto p1 = make_round_policy(policy, {level, 0});
  SimResult r = simulate(sc.model, sc.workload, *p1);
  const double capacity = sc.model.total_gpus;
  double busy = 0, attained = 0;
  for (const auto& round : r.rounds) {
    EXPECT_LE(round.busy_gpu_seconds, capacity * (round.end - round.start) * (1 + 1e-12));
    busy += round.busy_gpu_seconds;
    double held = 0;
    for (double g : round.tenant_gpus) held += g;
    EXPECT_LE(held, capacity + 1e-9);
  }
  for (const auto& j : r.jobs) {
    ASSERT_FALSE(std::isnan(j.finish)) << j.id;
    EXPECT_DOUBLE_EQ(j.done, j.work) << j.id;
    EXPECT_GE(j.first_start, j.arrival);
    EXPECT_GT(j.finish, j.first_start);
    // Restart overhead and progress both fit in the GPU time it held.
    EXPECT_GE(j.attained_gpu_seconds, j.workers * 10.0 * (1 + j.restarts) - 1e-6) << j.id;
    attained += j.attained_gpu_seconds;
  }
  EXPECT_NEAR(attained, busy, 1e-6 * busy);

  auto p2 = make_round_policy(policy, {level, 0});
  SimResult again = simulate(sc.model, sc.workload, *p2);
  EXPECT_EQ(jobs_csv(r), jobs_csv(again));
  EXPECT_EQ(tenants_csv(r), tenants_csv(again));
}

// The same where a gang must keep to one node (Cluster::gangs_on_one_node,
// as serve plans for Slurm): validate_plan throws on a gang spread over nodes,
// and the built-in workload's 8-GPU gangs still all run, each on one node.
class OneNodeGangs : public Conservation {};

TEST_P(OneNodeGangs, AllFinishNoneSpread) {
  auto [policy, level] = GetParam();
  ScenarioOptions o = small_scenario();
  o.gangs_on_one_node = true;
  Scenario sc = load_scenario(o);
  ASSERT_TRUE(sc.model.cluster.gangs_on_one_node);
  auto p = make_round_policy(policy, {level, 0});
  SimResult r = simulate(sc.model, sc.workload, *p);
  int gangs = 0;
  for (const auto& j : r.jobs) {
    ASSERT_FALSE(std::isnan(j.finish)) << j.id;
    EXPECT_DOUBLE_EQ(j.done, j.work) << j.id;
    EXPECT_EQ(j.cross_type_placements, 0) << j.id;
    gangs += j.workers > 1;
  }
  EXPECT_GT(gangs, 10);
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
  std::string name = std::get<0>(info.param) + "_" + std::get<1>(info.param);
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    SharePolicies, Conservation,
    ::testing::Combine(::testing::Values("oef-coop", "oef-noncoop", "gavel", "gandiva-fair",
                                         "max-min", "max-sum-throughput"),
                       ::testing::Values("tenant", "job")),
    param_name);

// The time-sharing policies (job level only): also no starvation (every job
// finishes) and the gang rule (validate_plan throws on a partial gang).
INSTANTIATE_TEST_SUITE_P(TimeSharingPolicies, Conservation,
                         ::testing::Combine(::testing::Values("astraea", "themis", "ftf", "tiresias",
                                                              "allox", "fifo", "fifo-backfill",
                                                              "yarn-cs", "hived", "drf"),
                                            ::testing::Values("job")),
                         param_name);

// The policies whose placement a backend's gang rule constrains.
const auto kGangRuleSharePolicies = ::testing::Combine(
    ::testing::Values("oef-coop", "oef-noncoop", "gavel", "gandiva-fair", "max-min",
                      "max-sum-throughput"),
    ::testing::Values("tenant", "job"));
const auto kGangRuleJobLevelPolicies = ::testing::Combine(
    ::testing::Values("astraea", "themis", "ftf", "tiresias", "allox", "fifo", "fifo-backfill",
                      "yarn-cs", "hived", "drf", "ossp", "synergy-proportional", "synergy-greedy",
                      "synergy-tune"),
    ::testing::Values("job"));

INSTANTIATE_TEST_SUITE_P(SharePolicies, OneNodeGangs, kGangRuleSharePolicies, param_name);
INSTANTIATE_TEST_SUITE_P(JobLevelPolicies, OneNodeGangs, kGangRuleJobLevelPolicies, param_name);

// Where a backend gives a job one GPU count per node (Cluster::
// gangs_spread_evenly, as serve plans for Slurm): on nodes of 2 GPUs, every
// gang the plan or a mid-round start spreads takes the same count on each of
// its nodes, all of one type, and every job still finishes. A decorator
// checks each plan the policy returns.
class EvenSpreadCheck : public RoundPolicy {
 public:
  EvenSpreadCheck(RoundPolicy& inner, const ClusterModel& model) : inner_(inner), model_(model) {}
  std::string_view name() const override { return inner_.name(); }
  std::string_view level() const override { return inner_.level(); }
  double interval() const override { return inner_.interval(); }
  bool reads_progress() const override { return inner_.reads_progress(); }
  bool starts_midround() const override { return inner_.starts_midround(); }
  Stability stability(const SchedulerState& s) const override { return inner_.stability(s); }
  RoundPlan plan(const SchedulerState& s) override {
    RoundPlan p = inner_.plan(s);
    for (const Assignment& a : p.run) check(a, s);
    return p;
  }
  std::vector<Assignment> midround(const SchedulerState& s, const std::vector<DeviceRef>& free,
                                   double round_end) override {
    std::vector<Assignment> out = inner_.midround(s, free, round_end);
    for (const Assignment& a : out) check(a, s);
    return out;
  }
  int spread = 0;
  std::vector<std::string> uneven;

 private:
  void check(const Assignment& a, const SchedulerState& s) {
    std::map<std::uint32_t, int> per_node;
    std::set<std::size_t> types;
    for (DeviceRef d : a.devices) {
      ++per_node[d.node];
      types.insert(model_.cluster.nodes[d.node].type);
    }
    if (per_node.size() < 2) return;
    ++spread;
    std::set<int> counts;
    for (const auto& [node, n] : per_node) counts.insert(n);
    if (counts.size() > 1 || types.size() > 1)
      uneven.push_back(s.jobs[a.job].record.id + " at " + std::to_string(s.now));
  }
  RoundPolicy& inner_;
  const ClusterModel& model_;
};

class EvenGangs : public Conservation {};

TEST_P(EvenGangs, EverySpreadTakesTheSameCountOnEachNodeOfOneType) {
  auto [policy, level] = GetParam();
  ScenarioOptions o = generated_scenario(60, 6, 20, 7);
  o.cluster_spec = "k80:12:2,p100:12:2,v100:12:2";
  o.gangs_spread_evenly = true;
  Scenario sc = load_scenario(o);
  ASSERT_TRUE(sc.model.cluster.gangs_spread_evenly);
  auto inner = make_round_policy(policy, {level, 0});
  EvenSpreadCheck p(*inner, sc.model);
  SimResult r = simulate(sc.model, sc.workload, p);
  for (const auto& j : r.jobs) {
    ASSERT_FALSE(std::isnan(j.finish)) << j.id;
    EXPECT_DOUBLE_EQ(j.done, j.work) << j.id;
  }
  EXPECT_GT(p.spread, 10);  // gangs of 4 and 8 on 2-GPU nodes
  EXPECT_TRUE(p.uneven.empty()) << p.uneven.size() << " uneven, first: " << p.uneven.front();
}

INSTANTIATE_TEST_SUITE_P(SharePolicies, EvenGangs, kGangRuleSharePolicies, param_name);
INSTANTIATE_TEST_SUITE_P(JobLevelPolicies, EvenGangs, kGangRuleJobLevelPolicies, param_name);

}  // namespace
}  // namespace fairgpu
