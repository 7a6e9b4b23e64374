// Simulation metrics and output files (src/report/sim_metrics.cc,
// sim_output.cc) on hand-built SimResults whose numbers are derived in the
// comments.
#include "fairgpu/sim_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fairgpu {
namespace {

constexpr double kEps = 1e-12;

JobRecord job(std::string id, std::string tenant, double arrival, double first_start,
              double finish) {
  JobRecord j;
  j.id = std::move(id);
  j.tenant = std::move(tenant);
  j.job_type = "resnet";
  j.arrival = arrival;
  j.first_start = first_start;
  j.finish = finish;
  return j;
}

// One GPU type: tenant_gpus has one entry per tenant. A tenant's demand
// (for ρ_tenant) comes from SimResult::jobs, not from the rounds.
RoundSample sample(double start, double end, std::vector<double> throughput,
                   std::vector<int> active, double busy_gpu_seconds) {
  RoundSample r;
  r.start = start;
  r.end = end;
  r.busy_gpu_seconds = busy_gpu_seconds;
  r.tenant_gpus = throughput;  // speedup 1: one GPU per unit of throughput
  r.tenant_throughput = std::move(throughput);
  r.tenant_active_jobs = std::move(active);
  for (int a : r.tenant_active_jobs) r.active_jobs += a;
  return r;
}

SimResult cluster(std::vector<TenantSpec> tenants) {
  SimResult r;
  r.policy = "fifo";
  r.level = "job";
  r.round_s = 100;
  r.gpu_types = {"k80"};
  r.capacity = {4};
  r.tenants = std::move(tenants);
  return r;
}

// Two jobs of tenant "a" on 4 K80s:
//   j1: arrives 0, runs 0-100 on 2 GPUs  -> JCT 100, delay 0
//   j2: arrives 50, runs 100-300 on 4    -> JCT 250, delay 50
// makespan 300 - 0 = 300; busy 2x100 + 4x200 = 1000 GPU-s;
// utilisation 1000 / (4 x 300) = 5/6; actual throughput (2x100 + 4x200) / 300.
// FTF: j1 100 / (50 x 1) = 2 (unfair), j2 250 / (200 x 1.25) = 1 (fair: not > 1).
// LTGF: j1 200 / 200 = 1, j2 800 / 1000 = 0.8 (< 0.95: sharing loss).
// ρ_tenant (one tenant, quota 4): demand 2 over [0, 50), 2 + 4 = 6 over
// [50, 100), 4 over [100, 300); fair 2x50 + 4x50 + 4x200 = 1100, alloc 1000.
SimResult two_jobs() {
  SimResult r = cluster({{"a", 1.0}});
  JobRecord j1 = job("j1", "a", 0, 0, 100);
  j1.workers = 2;
  j1.exclusive_s = 50;
  j1.contention_avg = 1;
  j1.attained_gpu_seconds = 200;
  j1.fair_gpu_seconds = 200;
  j1.restarts = 1;
  j1.preemptions = 2;
  JobRecord j2 = job("j2", "a", 50, 100, 300);
  j2.workers = 4;
  j2.exclusive_s = 200;
  j2.contention_avg = 1.25;
  j2.attained_gpu_seconds = 800;
  j2.fair_gpu_seconds = 1000;
  j2.restarts = 2;
  j2.cross_type_placements = 3;
  r.jobs = {j1, j2};
  r.rounds = {sample(0, 100, {2}, {1}, 200), sample(100, 300, {4}, {1}, 800)};
  r.rounds[0].compute_seconds = 0.01;
  r.rounds[0].recomputed = true;
  r.rounds[1].compute_seconds = 0.03;
  r.start = 0;
  r.end = 300;
  r.wall_seconds = 1.5;
  return r;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(SimReport, TotalGpusSumsCapacity) {
  SimResult r = cluster({});
  r.gpu_types = {"k80", "v100"};
  r.capacity = {4, 6};
  EXPECT_EQ(r.total_gpus(), 10);
}

TEST(SimReport, JctMakespanUtilisationOfTwoJobs) {
  SimSummary s = summarise(two_jobs());
  EXPECT_EQ(s.jobs, 2);
  EXPECT_EQ(s.finished_jobs, 2);
  EXPECT_EQ(s.unfinished_jobs, 0);
  EXPECT_NEAR(s.avg_jct_s, 175, kEps);  // (100 + 250) / 2
  // Nearest rank on {100, 250}: p50 -> rank ceil(1) = 1, p95/p99 -> rank 2.
  EXPECT_EQ(s.p50_jct_s, 100);
  EXPECT_EQ(s.p95_jct_s, 250);
  EXPECT_EQ(s.p99_jct_s, 250);
  EXPECT_EQ(s.max_jct_s, 250);
  EXPECT_NEAR(s.avg_queueing_delay_s, 25, kEps);  // (0 + 50) / 2
  EXPECT_NEAR(s.makespan_s, 300, kEps);
  EXPECT_NEAR(s.busy_gpu_seconds, 1000, kEps);
  EXPECT_NEAR(s.utilisation, 1000.0 / 1200.0, kEps);
  EXPECT_NEAR(s.actual_throughput, 1000.0 / 300.0, kEps);
  EXPECT_TRUE(std::isnan(s.estimated_throughput));  // no round carries one
}

TEST(SimReport, FinishTimeFairnessCountsRhoAboveOne) {
  SimSummary s = summarise(two_jobs());
  EXPECT_NEAR(ftf_rho(two_jobs().jobs[0]), 2.0, kEps);
  EXPECT_NEAR(ftf_rho(two_jobs().jobs[1]), 1.0, kEps);
  EXPECT_EQ(s.ftf_jobs, 2);
  EXPECT_NEAR(s.unfair_fraction, 0.5, kEps);  // ρ = 1 exactly is fair
  EXPECT_NEAR(s.worst_ftf_rho, 2.0, kEps);
  EXPECT_NEAR(s.avg_ftf_rho, 1.5, kEps);
}

TEST(SimReport, LtgfSharingLossBelowNinetyFivePercent) {
  SimSummary s = summarise(two_jobs());
  EXPECT_EQ(s.ltgf_jobs, 2);
  EXPECT_EQ(s.ltgf_excluded_jobs, 0);
  EXPECT_NEAR(s.sharing_loss_fraction, 0.5, kEps);  // j2's 0.8
  EXPECT_NEAR(s.min_ltgf_rho, 0.8, kEps);
  EXPECT_NEAR(s.avg_ltgf_rho, 0.9, kEps);
}

TEST(SimReport, LtgfExcludesJobsWithoutFairShare) {
  SimResult r = two_jobs();
  r.jobs[1].fair_gpu_seconds = 0;  // j2 now has no ρ_job
  SimSummary s = summarise(r);
  EXPECT_EQ(s.ltgf_jobs, 1);
  EXPECT_EQ(s.ltgf_excluded_jobs, 1);
  EXPECT_NEAR(s.sharing_loss_fraction, 0.0, kEps);  // only j1 (ρ 1) is rated
  EXPECT_TRUE(std::isnan(ltgf_rho(r.jobs[1])));
}

// The one window (1 h, cut at 300) of two_jobs(): ρ 1000 / 1100 < 1, so the
// only rated case is unfair. j2 waits over [50, 100) with demand: the fair
// share counts it from its arrival, not from the round that starts it.
TEST(SimReport, TenantWindowOfTwoJobs) {
  auto w = tenant_windows(two_jobs(), 3600);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].end, 300.0);
  EXPECT_EQ(w[0].alloc_gpu_seconds, 1000.0);
  EXPECT_EQ(w[0].fair_gpu_seconds, 1100.0);
  EXPECT_NEAR(w[0].rho, 1000.0 / 1100.0, kEps);
  SimSummary s = summarise(two_jobs());
  EXPECT_EQ(s.tenant_windows_rated, 1);
  EXPECT_EQ(s.tenant_unfairness_ratio, 1.0);
}

TEST(SimReport, DisruptionAndSchedulerCost) {
  SimSummary s = summarise(two_jobs());
  EXPECT_EQ(s.restarts, 3);
  EXPECT_EQ(s.preemptions, 2);
  EXPECT_EQ(s.cross_type_placements, 3);
  EXPECT_EQ(s.rounds, 2);
  EXPECT_EQ(s.recomputations, 1);
  EXPECT_EQ(s.compute_p50_s, 0.01);  // rank ceil(0.5 x 2) = 1
  EXPECT_EQ(s.compute_max_s, 0.03);
  EXPECT_NEAR(s.compute_total_s, 0.04, kEps);
  EXPECT_EQ(s.wall_seconds, 1.5);
}

// Adds to two_jobs(): j3 arrives at 200 and never runs; j4 arrives at 100,
// starts at 150 and is still running when the simulation stops at 400.
// JCT statistics keep only j1 and j2; the queueing delay adds j4's 50:
// (0 + 50 + 50) / 3. The span runs to the stop: makespan 400.
TEST(SimReport, UnfinishedJobsAreCountedButHaveNoJct) {
  SimResult r = two_jobs();
  JobRecord j3 = job("j3", "a", 200, kUnset, kUnset);
  j3.exclusive_s = 10;
  JobRecord j4 = job("j4", "a", 100, 150, kUnset);
  j4.exclusive_s = 10;
  j4.attained_gpu_seconds = 10;
  j4.fair_gpu_seconds = 100;  // ρ 0.1, but unfinished: not a sharing-loss job
  r.jobs.push_back(j3);
  r.jobs.push_back(j4);
  r.end = 400;
  SimSummary s = summarise(r);
  EXPECT_EQ(s.jobs, 4);
  EXPECT_EQ(s.finished_jobs, 2);
  EXPECT_EQ(s.unfinished_jobs, 2);
  EXPECT_EQ(s.never_started_jobs, 1);
  EXPECT_NEAR(s.avg_jct_s, 175, kEps);
  EXPECT_EQ(s.p99_jct_s, 250);
  EXPECT_NEAR(s.avg_queueing_delay_s, 100.0 / 3.0, kEps);
  EXPECT_NEAR(s.makespan_s, 400, kEps);
  EXPECT_EQ(s.ftf_jobs, 2);
  EXPECT_EQ(s.ltgf_jobs, 2);
  EXPECT_NEAR(s.sharing_loss_fraction, 0.5, kEps);
  EXPECT_TRUE(std::isnan(job_jct(j3)));
  EXPECT_TRUE(std::isnan(ftf_rho(j4)));
  EXPECT_NEAR(ltgf_rho(j4), 0.1, kEps);  // service so far, shown in the jobs CSV
}

TEST(SimReport, NoFinishedJobLeavesJctUndefined) {
  SimResult r = cluster({{"a", 1.0}});
  r.jobs = {job("j", "a", 0, kUnset, kUnset)};
  r.end = 50;
  SimSummary s = summarise(r);
  EXPECT_TRUE(std::isnan(s.avg_jct_s));
  EXPECT_TRUE(std::isnan(s.p50_jct_s));
  EXPECT_TRUE(std::isnan(s.avg_queueing_delay_s));
  EXPECT_TRUE(std::isnan(s.unfair_fraction));
  EXPECT_TRUE(std::isnan(s.jain_index));  // no round, no active tenant
  EXPECT_NEAR(s.makespan_s, 50, kEps);
}

TEST(SimReport, PercentileNearestRankOnTenValues) {
  const std::vector<double> v = {7, 3, 10, 1, 9, 2, 8, 5, 4, 6};  // 1..10 shuffled
  EXPECT_EQ(percentile_nearest_rank(v, 50), 5);                   // rank ceil(5.0) = 5
  EXPECT_EQ(percentile_nearest_rank(v, 95), 10);                  // rank ceil(9.5) = 10
  EXPECT_EQ(percentile_nearest_rank(v, 99), 10);                  // rank ceil(9.9) = 10
  EXPECT_EQ(percentile_nearest_rank(v, 90), 9);                   // rank ceil(9.0) = 9
  EXPECT_EQ(percentile_nearest_rank(v, 10), 1);                   // rank 1
  EXPECT_EQ(percentile_nearest_rank(v, 11), 2);                   // rank ceil(1.1) = 2
  EXPECT_EQ(percentile_nearest_rank(v, 100), 10);
  // 20 values: p95 is rank exactly 19 (no floating-point round-up to 20).
  std::vector<double> w;
  for (int i = 1; i <= 20; ++i) w.push_back(i);
  EXPECT_EQ(percentile_nearest_rank(w, 95), 19);
  EXPECT_TRUE(std::isnan(percentile_nearest_rank({}, 50)));
  EXPECT_THROW(percentile_nearest_rank(v, 0), std::invalid_argument);
  EXPECT_THROW(percentile_nearest_rank(v, 101), std::invalid_argument);
}

// Tenants a, b, c. a is active in both rounds at throughput 1; b only in the
// first, at 3 (its average is over its active time: 3x100 / 100 = 3, not 1.5);
// c is never active and does not count. Jain = (1 + 3)² / (2 x (1 + 9)) = 0.8.
TEST(SimReport, JainIndexOverActiveTenants) {
  SimResult r = cluster({{"a", 1.0}, {"b", 1.0}, {"c", 1.0}});
  r.jobs = {job("j", "a", 0, 0, 200)};
  r.rounds = {sample(0, 100, {1, 3, 0}, {1, 1, 0}, 400),
              sample(100, 200, {1, 0, 0}, {1, 0, 0}, 100)};
  SimSummary s = summarise(r);
  EXPECT_EQ(s.active_tenants, 2);
  EXPECT_NEAR(s.jain_index, 0.8, kEps);
  // Total throughput: (4 x 100 + 1 x 100) / 200.
  EXPECT_NEAR(s.actual_throughput, 2.5, kEps);
}

// Throughput 1 and 3 with weights 1 and 3: 1 per unit of weight each, Jain 1.
TEST(SimReport, JainIndexDividesByTenantWeight) {
  SimResult r = cluster({{"a", 1.0}, {"b", 3.0}});
  r.jobs = {job("j", "a", 0, 0, 100)};
  r.rounds = {sample(0, 100, {1, 3}, {1, 2}, 400)};
  EXPECT_NEAR(summarise(r).jain_index, 1.0, kEps);
}

// Estimated throughput 6 over [0, 100), none over [100, 200): the same
// denominator as actual (the makespan), so 6 x 100 / 200 = 3.
TEST(SimReport, EstimatedThroughputIsTimeAveragedOverTheMakespan) {
  SimResult r = cluster({{"a", 1.0}});
  r.jobs = {job("j", "a", 0, 0, 200)};
  r.rounds = {sample(0, 100, {4}, {1}, 400), sample(100, 200, {2}, {1}, 200)};
  r.rounds[0].estimated_throughput = 6;
  SimSummary s = summarise(r);
  EXPECT_NEAR(s.estimated_throughput, 3.0, kEps);
  EXPECT_NEAR(s.actual_throughput, 3.0, kEps);  // (4 x 100 + 2 x 100) / 200
}

TEST(SimReport, MalformedRoundIsRejected) {
  SimResult r = two_jobs();
  r.rounds[1].tenant_active_jobs.clear();
  try {
    summarise(r);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("round 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tenant_active_jobs"), std::string::npos) << e.what();
  }
  EXPECT_THROW(jobs_csv(r), std::invalid_argument);
}

TEST(SimReport, JobsCsvHasHeaderOneRowPerJobAndEmptyCellsForNan) {
  SimResult r = two_jobs();
  JobRecord j3 = job("j3", "x,\"y\"", 200, kUnset, kUnset);  // needs quoting
  r.jobs.push_back(j3);
  r.tenants.push_back({"x,\"y\"", 1.0});
  r.rounds.clear();  // shaped for one tenant; jobs.csv reads only the jobs
  r.end = 400;
  auto rows = lines(jobs_csv(r));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0],
            "job_id,tenant,job_type,workers,arrival,first_start,finish,jct,queueing_delay,"
            "attained_gpu_seconds,restarts,preemptions,cross_type_placements,ftf_rho,ltgf_rho,"
            "ltgf_tenant_rho");
  // ltgf_tenant_rho (eq. 15): 4 GPUs, two tenants of weight 1, quota 2 each.
  //   a, [0, 50): j1 alone, min(demand 2, 2) = 2 -> 100 GPU-s.
  //   a, [50, 100): demand 6, share 2 split by weight: j1 and j2 1 each -> 50.
  //   a, [100, 300): j2 alone, min(4, 2) = 2 -> 400.
  //   j1: 200 / 150; j2: 800 / 450.
  //   x,"y": j3 alone from 200 to the end (400), demand 1 -> 200; attained 0.
  EXPECT_EQ(rows[1], "j1,a,resnet,2,0,0,100,100,0,200,1,2,0,2,1,1.333333333");
  EXPECT_EQ(rows[2], "j2,a,resnet,4,50,100,300,250,50,800,2,0,3,1,0.8,1.777777778");
  // Never started, unfinished, no eq. 5 fair share: every derived cell is
  // empty but eq. 15's: it had 200 GPU-s of fair share and got none.
  EXPECT_EQ(rows[3], "j3,\"x,\"\"y\"\"\",resnet,1,200,,,,,0,0,0,0,,,0");
}

TEST(SimReport, TenantsCsvHasOneRowPerRoundPerTenant) {
  SimResult r = cluster({{"a", 1.0}, {"b", 2.0}});
  r.gpu_types = {"k80", "v100"};
  r.capacity = {4, 2};
  r.jobs = {job("j", "a", 0, 0, 200)};
  RoundSample first = sample(0, 100, {1, 2.5}, {1, 2}, 300);
  first.tenant_gpus = {1, 0, 0, 1};  // a: 1 k80; b: 1 v100
  RoundSample second = sample(100, 200, {1, 0}, {1, 0}, 100);
  second.tenant_gpus = {1, 0, 0, 0};
  r.rounds = {first, second};
  auto rows = lines(tenants_csv(r));
  // b in the second round: nothing active, nothing held: no row.
  ASSERT_EQ(rows.size(), 1u + 3);
  EXPECT_EQ(rows[0],
            "round_start,round_end,tenant,active_jobs,normalised_throughput,gpus_k80,"
            "gpus_v100");
  EXPECT_EQ(rows[1], "0,100,a,1,1,1,0");
  EXPECT_EQ(rows[2], "0,100,b,2,2.5,0,1");
  EXPECT_EQ(rows[3], "100,200,a,1,1,1,0");
  // One 1000 s window: both rounds, averaged by time (b: half the time 2.5).
  auto windowed = lines(tenants_csv(r, 1000));
  ASSERT_EQ(windowed.size(), 1u + 2);
  EXPECT_EQ(windowed[1], "0,200,a,1,1,1,0");
  EXPECT_EQ(windowed[2], "0,200,b,1,1.25,0,0.5");
  EXPECT_THROW(tenants_csv(r, -1), std::invalid_argument);
}

TEST(SimReport, UtilisationCsvHasOneRowPerRound) {
  SimResult r = two_jobs();
  r.rounds[0].estimated_throughput = 2.25;
  auto rows = lines(utilisation_csv(r));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0],
            "start,end,busy_gpu_seconds,utilisation,active_jobs,recomputed,"
            "estimated_throughput,actual_throughput,idle_waiting_gpu_seconds,contended_s");
  EXPECT_EQ(rows[1], "0,100,200,0.5,1,1,2.25,2,0,0");  // 200 / (4 x 100)
  EXPECT_EQ(rows[2], "100,300,800,1,1,0,,4,0,0");      // no estimate: empty
  // One window of both rounds: 1000 busy GPU-s of 4 x 300, throughput 2 for
  // 100 s and 4 for 200 s, the estimate 2.25 over its 100 s of 300.
  auto windowed = lines(utilisation_csv(r, 3600));
  ASSERT_EQ(windowed.size(), 2u);
  EXPECT_EQ(windowed[1], "0,300,1000,0.8333333333,1,1,0.75,3.333333333,0,0");
  // A window shorter than a round changes nothing.
  EXPECT_EQ(utilisation_csv(r, 50), utilisation_csv(r));
}

// A round alone in its row prints its own values, not value x length /
// length: visible for a round of length 0 (a horizon at a scheduling point),
// whose time-weighted average would be 0.
TEST(SimReport, SeriesRowOfOneRoundPrintsTheRoundsValues) {
  SimResult r = two_jobs();
  RoundSample cut = sample(300, 300, {3}, {2}, 0);
  cut.estimated_throughput = 1.5;
  r.rounds.push_back(cut);
  EXPECT_EQ(lines(utilisation_csv(r)).back(), "300,300,0,,2,0,1.5,3,0,0");
  EXPECT_EQ(lines(tenants_csv(r)).back(), "300,300,a,2,3,3");
  // In a window with others it weighs nothing.
  EXPECT_EQ(lines(utilisation_csv(r, 3600)).back(),
            "0,300,1000,0.8333333333,1,1,0,3.333333333,0,0");
}

TEST(SimReport, SummaryJsonHasSetupEveryMetricAndNullForNan) {
  SimResult r = two_jobs();
  SimSummary s = summarise(r);
  auto j = nlohmann::json::parse(summary_json(r, s));
  EXPECT_EQ(j["policy"], "fifo");
  EXPECT_EQ(j["level"], "job");
  EXPECT_EQ(j["round_s"], 100.0);
  EXPECT_EQ(j["gpu_types"], nlohmann::json::array({"k80"}));
  EXPECT_EQ(j["capacity"]["k80"], 4);
  EXPECT_EQ(j["total_gpus"], 4);
  EXPECT_EQ(j["jobs"], 2);
  EXPECT_EQ(j["makespan_s"], 300.0);
  EXPECT_EQ(j["unfair_fraction"], 0.5);
  // Static N = max(1, 2 jobs / 4 GPUs) = 1: ρ = 100 / 50 = 2 and 250 / 200 =
  // 1.25 (j2's time-averaged N of 1.25 makes its ρ 1, not unfair).
  EXPECT_EQ(j["ftf_static_contention"], 1.0);
  EXPECT_EQ(j["worst_ftf_rho_static"], 2.0);
  EXPECT_EQ(j["unfair_fraction_static"], 1.0);
  EXPECT_EQ(j["unfair_fraction_static_105"], 1.0);
  EXPECT_TRUE(j["estimated_throughput"].is_null());
  std::istringstream metrics(
      "finished_jobs unfinished_jobs never_started_jobs busy_gpu_seconds utilisation avg_jct_s "
      "p50_jct_s p95_jct_s p99_jct_s p999_jct_s max_jct_s avg_queueing_delay_s ftf_jobs avg_ftf_rho "
      "worst_ftf_rho ltgf_jobs ltgf_excluded_jobs avg_ltgf_rho min_ltgf_rho sharing_loss_fraction "
      "active_tenants jain_index actual_throughput restarts preemptions cross_type_placements "
      "rounds recomputations "
      "avg_slowdown p95_slowdown fairness_window_s tenant_windows_rated tenant_unfairness_ratio "
      "min_tenant_rho p5_tenant_rho restart_overhead_s restart_overhead_share ltgf_tenant_jobs "
      "avg_ltgf_tenant_rho min_ltgf_tenant_rho tenant_sharing_loss_fraction contended_s "
      "contended_actual_throughput contended_estimated_throughput contended_utilisation "
      "throughput_per_busy_gpu idle_waiting_gpu_hours plan_idle_waiting_gpu_hours");
  for (std::string key; metrics >> key;) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["first_arrival_s"], 0.0);  // the series' time origin
  // 8 setup fields + the 56 of SimSummary but the wall-clock 4: a new field
  // must be added here too.
  EXPECT_EQ(j.size(), 8u + 56u);
  // Those 4 are timing.json's, and only there.
  auto t = nlohmann::json::parse(timing_json(s));
  EXPECT_EQ(t.size(), 4u);
  for (const char* key : {"wall_seconds", "compute_p50_s", "compute_max_s", "compute_total_s"}) {
    EXPECT_TRUE(t.contains(key)) << key;
    EXPECT_FALSE(j.contains(key)) << key;
  }
  EXPECT_EQ(t["compute_max_s"], 0.03);
}

// The value printed on the summary table's line for `metric`, "" if none.
std::string table_value(const std::string& table, const std::string& metric) {
  for (const auto& line : lines(table)) {
    if (line.rfind("  " + metric + " ", 0) != 0) continue;
    std::size_t value = line.find_first_not_of(' ', 2 + metric.size());
    return value == std::string::npos ? "" : line.substr(value);
  }
  return "";
}

TEST(SimReport, SummaryTableIsReadable) {
  SimResult r = two_jobs();
  std::string table = summary_table(r, summarise(r));
  EXPECT_EQ(lines(table)[0], "simulation  fifo (job level), round 100 s");
  EXPECT_EQ(lines(table)[1], "cluster     4 GPUs (k80 4), 1 tenant");
  EXPECT_EQ(table_value(table, "makespan"), "300.0 s (0.08 h)") << table;
  EXPECT_EQ(table_value(table, "utilisation, makespan"), "83.3 %") << table;
  EXPECT_EQ(table_value(table, "unfair (rho_FTF > 1, N avg)"), "50.0 %") << table;
  EXPECT_EQ(table_value(table, "worst rho_FTF (N static)"), "2.000 (N = 1.00)") << table;
  EXPECT_EQ(table_value(table, "unfair (N static = jobs / GPUs)"),
            "100.0 % (rho > 1), 100.0 % (rho > 1.05)")
      << table;
  EXPECT_EQ(table_value(table, "sharing-loss fraction (rho < 0.95)"), "50.0 %") << table;
  EXPECT_EQ(table_value(table, "estimated throughput, makespan"), "-") << table;
  EXPECT_EQ(table_value(table, "estimated throughput, contended"), "-") << table;
  EXPECT_EQ(table_value(table, "compute per round, p50"), "10.0 ms") << table;
  // Values start in one column, after at least one blank.
  std::size_t column = std::string::npos;
  for (const auto& line : lines(table)) {
    EXPECT_LE(line.size(), 100u) << line;
    EXPECT_TRUE(line.empty() || line.back() != ' ') << "trailing blank: " << line;
    if (line.rfind("  ", 0) != 0) continue;
    std::size_t at =
        line.size() - table_value(table, line.substr(2, line.find("  ", 2) - 2)).size();
    if (column == std::string::npos) column = at;
    EXPECT_EQ(at, column) << line;
    EXPECT_EQ(line[at - 1], ' ') << line;
  }
}

TEST(SimReport, IdenticalInputGivesIdenticalOutput) {
  SimResult a = two_jobs(), b = two_jobs();
  SimSummary sa = summarise(a), sb = summarise(b);
  EXPECT_EQ(jobs_csv(a), jobs_csv(b));
  EXPECT_EQ(tenants_csv(a), tenants_csv(b));
  EXPECT_EQ(utilisation_csv(a), utilisation_csv(b));
  EXPECT_EQ(summary_json(a, sa), summary_json(b, sb));
  EXPECT_EQ(summary_table(a, sa), summary_table(b, sb));
  std::vector<std::pair<std::string, SimSummary>> ra = {{"x", sa}}, rb = {{"x", sb}};
  EXPECT_EQ(compare_table(ra), compare_table(rb));
  EXPECT_EQ(compare_csv(ra), compare_csv(rb));
}

// Two runs: the second has twice the average JCT and no unfair job, so its
// ratio row reads 2.00x for avg JCT and 0.00x for the unfair fraction; its
// undefined estimated throughput is "-".
std::vector<std::pair<std::string, SimSummary>> two_runs() {
  SimSummary base = summarise(two_jobs());
  SimSummary other = base;
  other.avg_jct_s = 2 * base.avg_jct_s;
  other.unfair_fraction = 0;
  return {{"max-sum-throughput", base}, {"synergy-greedy-long-name", other}};
}

TEST(SimReport, CompareTableFitsAndShowsRatios) {
  std::string table = compare_table(two_runs());
  auto rows = lines(table);
  for (const auto& line : rows) EXPECT_LE(line.size(), 136u) << line;  // 24-char name + 112
  EXPECT_NE(table.find("ratio to max-sum-throughput"), std::string::npos) << table;
  // Rows: header (2), 2 runs, the legend, blank, ratio title, header (2), 2 runs.
  const std::size_t legend = lines(compare_legend()).size();
  ASSERT_EQ(rows.size(), 10u + legend) << table;
  EXPECT_EQ(rows[2].rfind("max-sum-throughput", 0), 0u);
  EXPECT_NE(rows[3].find("   0.10 "), std::string::npos) << rows[3];  // 350 s = 0.10 h
  EXPECT_NE(table.find(compare_legend()), std::string::npos);
  // The legend names every table column by its header.
  for (const char* column : {"avg JCT h", "p99 JCT h", "makespan h", "util cont. %",
                             "tput actual", "tput est.", "idle wait h", "FTF>1 N avg", "tenant unfair", "sharing loss15",
                             "slowdown", "Jain index", "restarts", "compute p50 ms"})
    EXPECT_NE(compare_legend().find(std::string("\n") + column), std::string::npos) << column;
  const std::string& ratios = rows.back();
  EXPECT_NE(ratios.find("  2.00x"), std::string::npos) << ratios;
  EXPECT_NE(ratios.find("  0.00x"), std::string::npos) << ratios;
  EXPECT_NE(ratios.find("      -"), std::string::npos) << ratios;
  EXPECT_EQ(lines(compare_table({})).size(), 2u);  // the header alone, no ratio block
}

TEST(SimReport, CompareCsvHasMetricsAndRatios) {
  auto rows = lines(compare_csv(two_runs()));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].rfind("policy,avg_jct_s,p95_jct_s,p99_jct_s,makespan_s,utilisation,", 0), 0u)
      << rows[0];
  EXPECT_NE(rows[0].find(",restart_overhead_share,avg_jct_s_ratio,"), std::string::npos)
      << rows[0];  // no compute_p50_s: wall-clock, timing.json's
  EXPECT_EQ(std::count(rows[0].begin(), rows[0].end(), ','), 50);  // 1 + 25 + 25 columns
  EXPECT_EQ(rows[2].rfind("synergy-greedy-long-name,350,", 0), 0u) << rows[2];
  // Ratio block (from column 26): avg JCT 2, then p95 and p99 JCT,
  // makespan, utilisation and actual throughput 1; estimated (undefined) is
  // empty.
  std::vector<std::string> cells;
  std::stringstream row(rows[2]);
  for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
  ASSERT_GE(cells.size(), 33u);
  EXPECT_EQ(cells[26], "2");
  for (std::size_t c = 27; c <= 31; ++c) EXPECT_EQ(cells[c], "1") << c;
  EXPECT_EQ(cells[32], "");
}

}  // namespace
}  // namespace fairgpu
