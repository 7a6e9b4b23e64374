// Dynamic adaptation (Shockwave): batch-size schedules, the readers, and the
// simulator's regime changes at the right epoch and rate.
#include "fairgpu/adaptation.h"

#include <gtest/gtest.h>

#include <limits>

#include <cmath>
#include <fstream>
#include <map>
#include <string>

#include "fairgpu/input_error.h"
#include "fairgpu/scenario.h"
#include "fairgpu/simulator.h"
#include "fairgpu/workload.h"
#include "test_files.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

const std::string kShockwave = std::string(FAIRGPU_SHARED_DATA) + "/shockwave/";

std::string temp_file(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/fairgpu-adaptation-test-" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(AdaptationSchedule, GnsDoublesAtTheTableEpochsAndTheLastEpochFallsBack) {
  // Job 0 of the 120-job trace: LM (batch size 10), 1 GPU, 134583 steps.
  // Epochs: ceil(134583 / ceil(59675 / 10)) = ceil(22.55) = 23. The table
  // doubles at epochs 11, 21, 41; epoch 22 is the last and keeps bs0 (spec:
  // 10 x 11, 20 x 10, 40 x 1, 10 x 1).
  EXPECT_EQ(epochs_of(134583, *dataset_samples("LM"), 10), 23);
  auto regimes = to_regimes(adaptation_schedule(AdaptationMode::kGns, "LM", 10, 1, 23));
  EXPECT_EQ(regimes, (std::vector<BatchRegime>{{10, 11}, {20, 10}, {40, 1}, {10, 1}}));
  // Inside the first segment the last epoch is doubled too; at or below the
  // first doubling epoch nothing changes; not in the table: static.
  EXPECT_EQ(to_regimes(adaptation_schedule(AdaptationMode::kGns, "LM", 10, 1, 15)),
            (std::vector<BatchRegime>{{10, 11}, {20, 4}}));
  EXPECT_EQ(to_regimes(adaptation_schedule(AdaptationMode::kGns, "LM", 10, 1, 11)),
            (std::vector<BatchRegime>{{10, 11}}));
  EXPECT_EQ(to_regimes(adaptation_schedule(AdaptationMode::kGns, "LM", 10, 8, 100)),
            (std::vector<BatchRegime>{{10, 100}}));
  // ResNet-18 bs64 sf1: x2 at 11, x4 at 31, capped at 256 from bs0 64.
  EXPECT_EQ(to_regimes(adaptation_schedule(AdaptationMode::kGns, "ResNet-18", 64, 1, 40)),
            (std::vector<BatchRegime>{{64, 11}, {128, 20}, {256, 8}, {64, 1}}));
}

TEST(AdaptationSchedule, AccordionGoesLargeOutsideCriticalRegimesAfterThirtyPercent) {
  // Job 1 of the trace: ResNet-18 bs32, 92 epochs. Critical: epochs < 10;
  // large iff e > 0.3 * 92 = 27.6, so from epoch 28 (the pickle's epoch 28).
  EXPECT_EQ(to_regimes(adaptation_schedule(AdaptationMode::kAccordion, "ResNet-18", 32, 1, 92)),
            (std::vector<BatchRegime>{{32, 28}, {256, 64}}));
  // ResNet-18 over 200 epochs: back to small in [150, 160).
  EXPECT_EQ(to_regimes(adaptation_schedule(AdaptationMode::kAccordion, "ResNet-18", 32, 1, 200)),
            (std::vector<BatchRegime>{{32, 61}, {256, 89}, {32, 10}, {256, 40}}));
  // ResNet-50: critical when e mod 30 < 10; large from e > 21: 22-29, 40-59.
  EXPECT_EQ(to_regimes(adaptation_schedule(AdaptationMode::kAccordion, "ResNet-50", 64, 1, 70)),
            (std::vector<BatchRegime>{{64, 22}, {128, 8}, {64, 10}, {128, 20}, {64, 10}}));
  // Transformer never adapts; a job already at the large size never changes.
  EXPECT_EQ(to_regimes(adaptation_schedule(AdaptationMode::kAccordion, "Transformer", 32, 1, 50)),
            (std::vector<BatchRegime>{{32, 50}}));
  EXPECT_EQ(to_regimes(adaptation_schedule(AdaptationMode::kAccordion, "LM", 80, 1, 50)),
            (std::vector<BatchRegime>{{80, 50}}));
}

TEST(ShockwaveTrace, ReadsTheCanonicalTraceWithTheSpecsRegimeCounts) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  Workload w = read_shockwave_trace(kShockwave + "120-jobs.trace", {});
  ASSERT_EQ(w.jobs.size(), 120u);
  std::map<AdaptationMode, int> modes;
  std::map<AdaptationMode, std::map<std::size_t, int>> regimes;
  for (const JobSpec& j : w.jobs) {
    ++modes[j.mode];
    ++regimes[j.mode][j.regimes.size()];
  }
  // Spec §1.2: 59 Accordion, 57 GNS, 4 static, and these regime counts.
  EXPECT_EQ(modes[AdaptationMode::kAccordion], 59);
  EXPECT_EQ(modes[AdaptationMode::kGns], 57);
  EXPECT_EQ(modes[AdaptationMode::kStatic], 4);
  EXPECT_EQ(regimes[AdaptationMode::kAccordion],
            (std::map<std::size_t, int>{{1, 24}, {2, 30}, {3, 1}, {4, 4}}));
  EXPECT_EQ(regimes[AdaptationMode::kGns],
            (std::map<std::size_t, int>{{1, 25}, {2, 13}, {4, 11}, {5, 6}, {6, 2}}));
  EXPECT_EQ(w.jobs[0].job_type, "LM (batch size 10)");
  EXPECT_EQ(w.jobs[0].workers, 1);
  EXPECT_EQ(w.jobs[2].arrival_s, 64);
}

TEST(ShockwaveTrace, IsolatedWorkWithAdaptationMatchesTheAuthorsProfile) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // Spec §1.2: the 120 jobs' isolated run times sum to 471,542 s with
  // adaptation (Σ duration_every_epoch on tacc "v100").
  ScenarioOptions o;
  o.trace_path = kShockwave + "120-jobs.trace";
  o.profiles_path = kShockwave + "tacc_throughputs.json";
  o.cluster_path = testing_support::source_path("examples/shockwave-32-v100.json");
  Scenario sc = load_scenario(o);
  SchedulerState s = make_scheduler_state(sc.model, sc.workload);
  double isolated = 0.0;
  for (const Job& j : s.jobs) isolated += j.record.exclusive_s;
  EXPECT_NEAR(isolated, 471542, 471542 * 0.002);
}

// A one-type cluster and a profile with two batch sizes of ResNet-18:
// bs32 at 15.625 it/s (1562.5 iterations an epoch: 100 s an epoch), bs64 at
// 15.625 it/s (781.25 iterations: 50 s an epoch).
ClusterModel two_speed_model(const Workload& w) {
  ProfileCatalogue c;
  c.source = "test";
  JobTypeProfile a, b;
  a.name = "ResNet-18 (batch size 32)";
  a.consolidated["v100"] = {{1, 15.625}};
  b.name = "ResNet-18 (batch size 64)";
  b.consolidated["v100"] = {{1, 15.625}};
  c.job_types = {a, b};
  Cluster cl;
  cl.gpu_types = {"v100"};
  cl.nodes.push_back({"n0", 0, 1, 8.0, 64.0});
  return bind_model(cl, c, w, 10.0);
}

Workload one_adaptive_job() {
  JobSpec j;
  j.id = "j";
  j.tenant = "t";
  j.job_type = "ResNet-18 (batch size 32)";
  j.iterations = 4 * 1562.5;
  j.mode = AdaptationMode::kGns;
  j.model = "ResNet-18";
  j.samples_per_epoch = 50000;
  j.regimes = {{32, 2}, {64, 2}};
  Workload w;
  w.tenants = {{"t", 1.0}};
  w.jobs = {j};
  return w;
}

TEST(AdaptiveSimulation, RegimeChangesAtItsEpochBoundaryAndOnlyThenIsSeen) {
  // Epochs 0-1 at 100 s each, 2-3 at 50 s; restart overhead 10 s.
  // Start at 0: the change is at 10 + 200 = 210 s, the finish at 310 s.
  Workload w = one_adaptive_job();
  ClusterModel m = two_speed_model(w);
  SchedulerState s = make_scheduler_state(m, w);
  const Job& j = s.jobs[0];
  EXPECT_DOUBLE_EQ(j.work, 4.0);
  EXPECT_DOUBLE_EQ(j.rate_best[0], 0.01);  // epochs/s of bs32
  EXPECT_DOUBLE_EQ(j.record.exclusive_s, 300.0);
  SimulatedExecutor ex(nullptr);
  admit_job(s, 0);
  RoundPlan plan;
  plan.run.push_back({0, {DeviceRef{0, 0}}, 1000.0});
  ex.apply(plan, s);
  s.changed = false;
  ex.advance(s, 209.0);
  EXPECT_EQ(j.regime, 0u);  // not yet: no peeking
  EXPECT_FALSE(s.changed);
  EXPECT_DOUBLE_EQ(j.rate, 0.01);
  ex.advance(s, 211.0);
  EXPECT_EQ(j.regime, 1u);
  EXPECT_TRUE(s.changed);
  EXPECT_DOUBLE_EQ(j.rate, 0.02);  // bs64: 50 s an epoch
  EXPECT_DOUBLE_EQ(j.done, 2.0);   // epochs kept across the change
  EXPECT_EQ(j.regime_starts, (std::vector<double>{0.0, 2.0}));
  ex.advance(s, 400.0);
  EXPECT_EQ(j.state, JobState::kFinished);
  EXPECT_DOUBLE_EQ(j.record.finish, 310.0);
}

TEST(AdaptiveSimulation, APreemptedJobResumesInItsRegimeAtItsEpoch) {
  // Run 0-150 s: 10 s overhead, 1.4 epochs. Restart at 150: overhead to 160,
  // 0.6 epoch more at bs32 (60 s) -> change at 220, then 2 epochs at 50 s ->
  // finish at 320.
  Workload w = one_adaptive_job();
  ClusterModel m = two_speed_model(w);
  SchedulerState s = make_scheduler_state(m, w);
  const Job& j = s.jobs[0];
  SimulatedExecutor ex(nullptr);
  admit_job(s, 0);
  RoundPlan run;
  run.run.push_back({0, {DeviceRef{0, 0}}, 150.0});
  ex.apply(run, s);
  ex.advance(s, 150.0);
  ex.apply(RoundPlan{}, s);  // lease ended, left out: preempted
  EXPECT_NEAR(j.done, 1.4, 1e-12);
  run.run[0].lease_end = 1000.0;
  ex.apply(run, s);
  ex.advance(s, 219.0);
  EXPECT_EQ(j.regime, 0u);
  ex.advance(s, 221.0);
  EXPECT_EQ(j.regime, 1u);
  ex.advance(s, 400.0);
  EXPECT_NEAR(j.record.finish, 320.0, 1e-9);
}

TEST(ShockwaveTrace, BadInputNamesLineAndField) {
  const std::string good =
      "LM (batch size 10)\tcmd\tdir\t--steps\t1\t134583\t1\tgns\t1\t-1\t1418\t0\n";
  auto expect_error = [&](const std::string& name, const std::string& line,
                          const std::string& field, const std::string& problem) {
    const std::string path = temp_file(name, good + line);
    try {
      read_shockwave_trace(path, {});
      ADD_FAILURE() << "accepted " << line;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path + ":2"), std::string::npos) << what;
      EXPECT_NE(what.find(field), std::string::npos) << what;
      EXPECT_NE(what.find(problem), std::string::npos) << what;
    }
  };
  expect_error("mode.trace", "LM (batch size 10)\tc\td\t-s\t1\t100\t1\tfast\t1\t-1\t10\t5\n",
               "mode", "expected static, accordion or gns");
  expect_error("model.trace", "VGG (batch size 10)\tc\td\t-s\t1\t100\t1\tgns\t1\t-1\t10\t5\n",
               "job_type", "no known dataset size");
  expect_error("nobs.trace", "LM\tc\td\t-s\t1\t100\t1\tgns\t1\t-1\t10\t5\n", "job_type",
               "names no batch size");
  expect_error("cols.trace", "LM (batch size 10)\tc\td\t-s\t1\t100\t1\tgns\t1\t-1\t5\n", "",
               "expected 12 tab-separated columns");
  expect_error("dur.trace", "LM (batch size 10)\tc\td\t-s\t1\t100\t1\tgns\t1\t-1\t-3\t5\n",
               "duration", "must be > 0");
}

TEST(NativeTrace, ModeAndBatchSizeColumnsGiveASchedule) {
  const std::string path =
      temp_file("native.csv",
                "job_id,tenant,job_type,num_workers,arrival_s,iterations,mode,batch_size\n"
                "a,t,LM,1,0,134583,gns,10\n"
                "b,t,ResNet-18 (batch size 32),1,5,100,,\n");
  Workload w = read_native_trace(path);
  ASSERT_EQ(w.jobs.size(), 2u);
  EXPECT_EQ(w.jobs[0].job_type, "LM (batch size 10)");
  EXPECT_EQ(w.jobs[0].regimes, (std::vector<BatchRegime>{{10, 11}, {20, 10}, {40, 1}, {10, 1}}));
  EXPECT_TRUE(w.jobs[1].regimes.empty());
  // Round trip through the writer.
  Workload again = read_native_trace(temp_file("native2.csv", write_native_trace(w)));
  EXPECT_EQ(again.jobs[0].regimes, w.jobs[0].regimes);
  EXPECT_TRUE(again.jobs[1].regimes.empty());

  auto rejected = [](const std::string& name, const std::string& text, const std::string& what) {
    try {
      read_native_trace(temp_file(name, text));
      ADD_FAILURE() << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  const std::string head =
      "job_id,tenant,job_type,num_workers,arrival_s,iterations,duration_s,mode,batch_size\n";
  rejected("m.csv", head + "a,t,LM,1,0,100,,slow,10\n", ":2: mode: expected static");
  rejected("d.csv", head + "a,t,LM,1,0,,100,gns,10\n", ":2: iterations: a job with a mode");
  rejected("b.csv", head + "a,t,LM (batch size 20),1,0,100,,gns,10\n",
           ":2: batch_size: 10 disagrees");
}

TEST(ShockwaveProfiles, BatchSizeWithoutAProfileEntryIsRejectedNamingTheJob) {
  // A GNS ResNet-18 bs64 job reaches bs128 and 256; a profile without them
  // cannot run it.
  const std::string trace = temp_file(
      "r18.trace", "ResNet-18 (batch size 64)\tc\td\t-s\t1\t100000\t1\tgns\t1\t-1\t10\t0\n");
  const std::string profiles =
      temp_file("p.json", R"j({"v100": {"('ResNet-18 (batch size 64)', 1)": {"null": 10.0}}})j");
  ScenarioOptions o;
  o.trace_path = trace;
  o.profiles_path = profiles;
  o.cluster_path = temp_file("v1.json", R"({"nodes": [{"name": "n", "gpu_type": "v100",
                                            "gpus": 4}]})");
  try {
    load_scenario(o);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("job job-0: job_type"), std::string::npos) << what;
    EXPECT_NE(what.find("ResNet-18 (batch size 128)"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace fairgpu

namespace fairgpu {
namespace {

TEST(ShockwaveGenerator, DrawsTheDynamicAdaptationMixDeterministically) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // §8.1's mix: half Accordion (static when under 1000 s), half GNS; gangs
  // 1/2/4/8 at 0.6/0.3/0.09/0.01; 0.2-5 h at the initial batch size.
  const ProfileCatalogue profiles =
      read_shockwave_profiles_file(kShockwave + "tacc_throughputs.json");
  GeneratorOptions g;
  g.style = "shockwave";
  g.jobs = 1000;
  g.tenants = 4;
  g.arrivals_per_hour = 3600.0 / 40.0;  // the 120-job trace's mean gap
  Workload w = generate_workload(g, profiles);
  ASSERT_EQ(w.jobs.size(), 1000u);
  std::map<AdaptationMode, int> modes;
  std::map<int, int> gangs;
  for (const JobSpec& j : w.jobs) {
    ++modes[j.mode];
    ++gangs[j.workers];
    EXPECT_FALSE(j.regimes.empty()) << j.id;
  }
  EXPECT_NEAR(modes[AdaptationMode::kGns] / 1000.0, 0.5, 0.05);
  EXPECT_NEAR((modes[AdaptationMode::kAccordion] + modes[AdaptationMode::kStatic]) / 1000.0, 0.5,
              0.05);
  EXPECT_NEAR(gangs[1] / 1000.0, 0.6, 0.05);
  EXPECT_NEAR(gangs[2] / 1000.0, 0.3, 0.05);
  EXPECT_NEAR(w.jobs.back().arrival_s / 999.0, 40.0, 4.0);
  // The same seed gives the same workload.
  EXPECT_EQ(write_native_trace(generate_workload(g, profiles)), write_native_trace(w));
}

// A count of steps no int can hold saturates (fuzz finding: 2e305 iterations
// was cast to int), so readers refuse it by their range check.
TEST(Adaptation, EpochsOfAHugeStepCountSaturates) {
  EXPECT_EQ(epochs_of(2e305, *dataset_samples("LM"), 16), std::numeric_limits<int>::max());
}

}  // namespace
}  // namespace fairgpu
