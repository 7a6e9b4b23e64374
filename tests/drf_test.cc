// `drf` (src/policy/drf.cc) and the CPU / memory demands it reads: the DRF
// paper's example (Ghodsi et al., NSDI 2011, §4: 9 CPUs, 18 GB; A's tasks
// <1 CPU, 4 GB>, B's <3 CPUs, 1 GB> -> A 3 tasks, B 2) mapped onto jobs with
// plentiful GPUs, weighted tenants, GPU-proportional defaults reducing DRF to
// GPU max-min, re-balancing at lease ends, and the trace readers' `cpus` /
// `memory_gb` (native CSV) and cpu_milli / memory_mib (Alibaba) columns.
// Every figure is derived in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fairgpu/input_error.h"
#include "fairgpu/scheduler.h"
#include "fairgpu/simulator.h"
#include "fairgpu/workload.h"
#include "toy_model.h"
#include "test_files.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

using toy::rec;

// Job type "lin": 1 it/s per GPU, scaling linearly, on "slow" GPUs.
ProfileCatalogue linear_profile() {
  ProfileCatalogue c;
  c.source = "linear";
  JobTypeProfile t;
  t.name = "lin";
  for (int g : {1, 2, 4, 8, 16, 20}) t.consolidated["slow"][g] = g;
  c.job_types = {t};
  return c;
}

struct NodeSpec {
  int gpus;
  double cpus, memory_gb;
};

Cluster slow_cluster(const std::vector<NodeSpec>& nodes) {
  Cluster c;
  c.gpu_types = {"slow"};
  for (std::size_t i = 0; i < nodes.size(); ++i)
    c.nodes.push_back(
        {"n" + std::to_string(i), 0, nodes[i].gpus, nodes[i].cpus, nodes[i].memory_gb});
  return c;
}

JobSpec job(std::string id, std::string tenant, int workers, double arrival, double cpus = kUnset,
            double memory_gb = kUnset) {
  JobSpec j;
  j.id = std::move(id);
  j.tenant = std::move(tenant);
  j.job_type = "lin";
  j.workers = workers;
  j.arrival_s = arrival;
  j.iterations = 1e6;
  j.cpus = cpus;
  j.memory_gb = memory_gb;
  return j;
}

Workload workload(std::vector<JobSpec> jobs, std::vector<TenantSpec> tenants) {
  Workload w;
  w.tenants = std::move(tenants);
  w.jobs = std::move(jobs);
  return w;
}

// The ids of the jobs DRF starts at the first scheduling point (t = 0, every
// job admitted, all devices free); the plan is checked by validate_plan.
std::set<std::string> first_point(const Cluster& c, const Workload& w, RoundPolicyOptions o = {}) {
  ClusterModel model = bind_model(c, linear_profile(), w, 10.0);
  SchedulerState s = make_scheduler_state(model, w);
  for (std::size_t i = 0; i < s.jobs.size(); ++i) admit_job(s, i);
  auto policy = make_round_policy("drf", o);
  RoundPlan plan = policy->plan(s);
  validate_plan(plan, s);
  std::set<std::string> ids;
  for (const Assignment& a : plan.run) ids.insert(s.jobs[a.job].record.id);
  return ids;
}

// The paper's cluster: 9 CPUs and 18 GB, with 20 GPUs so that GPUs never
// bind (a 1-GPU job's GPU share 1/20 is below both tasks' dominant shares).
Cluster paper_cluster() { return slow_cluster({{20, 9.0, 18.0}}); }

Workload paper_workload(double weight_a) {
  std::vector<JobSpec> jobs;
  for (int k = 1; k <= 5; ++k) jobs.push_back(job("a" + std::to_string(k), "A", 1, 0, 1.0, 4.0));
  for (int k = 1; k <= 5; ++k) jobs.push_back(job("b" + std::to_string(k), "B", 1, 0, 3.0, 1.0));
  return workload(std::move(jobs), {{"A", weight_a}, {"B", 1.0}});
}

TEST(Drf, PaperExampleGivesAThreeTasksAndBTwo) {
  // Dominant shares: an A task is memory 4/18 = 2/9, a B task CPU 3/9 = 1/3.
  // Progressive filling (ties to the lower tenant index):
  //   A 0 = B 0 -> A (2/9); B 0 -> B (1/3); A 2/9 -> A (4/9);
  //   B 1/3 -> B (2/3): CPUs 2 + 6 = 8, memory 8 + 2 = 10;
  //   A 4/9 -> A (2/3): CPUs 9, memory 14;
  //   A 2/3 = B 2/3 -> A needs 1 CPU, 0 left: frozen; B needs 3: frozen.
  // The paper's allocation: A <3 CPUs, 12 GB>, B <6 CPUs, 2 GB>, both 2/3.
  EXPECT_EQ(first_point(paper_cluster(), paper_workload(1.0)),
            (std::set<std::string>{"a1", "a2", "a3", "b1", "b2"}));
}

TEST(Drf, WeightDividesTheDominantShare) {
  // A weight 3: an A task adds 2/9 / 3 = 2/27, a B task 1/3 = 9/27.
  //   A 0 = B 0 -> A (2/27); B 0 -> B (9/27); A 2/27 -> A (4/27) -> A (6/27)
  //   -> A (8/27): 4 A tasks, CPUs 4 + 3 = 7, memory 16 + 1 = 17;
  //   A 8/27 < 9/27 -> A needs 4 GB, 1 left: frozen; B needs 3 CPUs, 2 left:
  //   frozen. No tie is involved. Unweighted it was A 3, B 2.
  EXPECT_EQ(first_point(paper_cluster(), paper_workload(3.0)),
            (std::set<std::string>{"a1", "a2", "a3", "a4", "b1"}));
}

TEST(Drf, GpusAreOneOfTheResources) {
  // 6 GPUs, 30 CPUs, no memory given (left out). A's jobs <1 GPU, 1 CPU>:
  // dominant GPU, 1/6 each; B's <1 GPU, 8 CPUs>: dominant CPU, 8/30 = 4/15.
  //   A 0 = B 0 -> A (1/6); B 0 -> B (4/15); A 1/6 -> A (1/3);
  //   B 4/15 -> B (8/15); A 1/3 -> A (1/2); A 1/2 < 8/15 -> A (2/3): GPUs
  //   full (CPUs 20). A 4, B 2: min dominant share 8/15, where taking turns
  //   by job count (A 3, B 3, CPUs 27) would leave A at 1/2.
  Cluster c = slow_cluster({{6, 30.0, 0.0}});
  std::vector<JobSpec> jobs;
  for (int k = 1; k <= 6; ++k) jobs.push_back(job("a" + std::to_string(k), "A", 1, 0, 1.0));
  for (int k = 1; k <= 6; ++k) jobs.push_back(job("b" + std::to_string(k), "B", 1, 0, 8.0));
  EXPECT_EQ(first_point(c, workload(jobs, {{"A", 1.0}, {"B", 1.0}})),
            (std::set<std::string>{"a1", "a2", "a3", "a4", "b1", "b2"}));
  // B weight 2: a B job adds 2/15. A (1/6); B (2/15); B 2/15 < 1/6 -> B
  // (4/15); A 1/6 -> A (1/3); B 4/15 -> B (2/5); A 1/3 -> A (1/2): A 3, B 3.
  // (Weighted turns by job count would give A 2, B 4.)
  EXPECT_EQ(first_point(c, workload(jobs, {{"A", 1.0}, {"B", 2.0}})),
            (std::set<std::string>{"a1", "a2", "a3", "b1", "b2", "b3"}));
}

TEST(Drf, TenantWhoseNextJobDoesNotFitIsSkippedForTheRound) {
  // 5 GPUs, GPU-proportional CPUs and memory. A: a1 (1 GPU), a2 (4), a3 (1);
  // B: five 1-GPU jobs. A a1 (1/5); B b1 (1/5); A first on the tie, a2 needs
  // 4 GPUs, 3 free: A is frozen (a3 does not jump its head). B goes on:
  // b2, b3, b4 fill the cluster. (The paper's Algorithm 1 would stop at a2,
  // leaving 3 GPUs idle.)
  Cluster c = slow_cluster({{5, 10.0, 40.0}});
  std::vector<JobSpec> jobs = {job("a1", "A", 1, 0), job("a2", "A", 4, 0), job("a3", "A", 1, 0)};
  for (int k = 1; k <= 5; ++k) jobs.push_back(job("b" + std::to_string(k), "B", 1, 0));
  EXPECT_EQ(first_point(c, workload(jobs, {{"A", 1.0}, {"B", 1.0}})),
            (std::set<std::string>{"a1", "b1", "b2", "b3", "b4"}));
}

TEST(Drf, GpuProportionalDefaultsReduceToGpuMaxMin) {
  // Two nodes with uneven CPUs and memory: 8 GPUs, 40 CPUs, 256 GB in all,
  // so an unset demand is 5 CPUs and 32 GB per GPU: every job's CPU and
  // memory shares equal its GPU share.
  Cluster c = slow_cluster({{4, 32.0, 64.0}, {4, 8.0, 192.0}});
  Workload w = workload({job("a1", "A", 1, 0), job("a2", "A", 1, 0), job("a3", "A", 1, 0),
                         job("b1", "B", 2, 0), job("b2", "B", 2, 0), job("c1", "C", 4, 0),
                         job("c2", "C", 4, 0), job("x", "A", 2, 0, 3.0, 7.5)},
                        {{"A", 1.0}, {"B", 1.0}, {"C", 1.0}});
  {
    ClusterModel model = bind_model(c, linear_profile(), w, 10.0);
    SchedulerState s = make_scheduler_state(model, w);
    EXPECT_DOUBLE_EQ(s.jobs[0].cpus, 5.0);
    EXPECT_DOUBLE_EQ(s.jobs[0].memory_gb, 32.0);
    EXPECT_DOUBLE_EQ(s.jobs[3].cpus, 10.0);
    EXPECT_DOUBLE_EQ(s.jobs[5].cpus, 20.0);
    EXPECT_DOUBLE_EQ(s.jobs[5].memory_gb, 128.0);
    EXPECT_DOUBLE_EQ(s.jobs[7].cpus, 3.0);  // given: kept
    EXPECT_DOUBLE_EQ(s.jobs[7].memory_gb, 7.5);
  }
  w.jobs.pop_back();
  // GPU max-min by progressive filling over GPU counts (gangs whole):
  //   A 0 -> a1 (1); B 0 -> b1 (2); C 0 -> c1 (4): 7 GPUs; A 1 -> a2 (2): 8.
  //   Then nothing fits: A {a1, a2} 2 GPUs, B {b1} 2, C {c1} 4.
  const std::set<std::string> max_min = {"a1", "a2", "b1", "c1"};
  EXPECT_EQ(first_point(c, w), max_min);
  // The same cluster with no CPUs or memory given (resources left out):
  // plain GPU DRF picks the same jobs.
  EXPECT_EQ(first_point(slow_cluster({{4, 0.0, 0.0}, {4, 0.0, 0.0}}), w), max_min);

  // Weighted: 12 GPUs, A weight 2, B weight 1, 1-GPU jobs. Weighted max-min
  // gives A 8, B 4 (a/12/2 = b/12); with ties to A the filling goes
  // A B A A B A A B A A B A.
  Cluster twelve = slow_cluster({{12, 24.0, 48.0}});
  std::vector<JobSpec> jobs;
  for (int k = 1; k <= 10; ++k) jobs.push_back(job("a" + std::to_string(k), "A", 1, 0));
  for (int k = 1; k <= 10; ++k) jobs.push_back(job("b" + std::to_string(k), "B", 1, 0));
  std::set<std::string> got = first_point(twelve, workload(jobs, {{"A", 2.0}, {"B", 1.0}}));
  EXPECT_EQ(got, (std::set<std::string>{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "b1", "b2",
                                        "b3", "b4"}));
}

TEST(Drf, SharesRebalanceAtLeaseEnds) {
  // 8 GPUs. A's eight 1-GPU jobs arrive at 0 and take every GPU; B's arrive
  // at 100 but nothing is decidable until the leases end at 900 (default
  // lease). Then all of A's jobs compete again: progressive filling
  // alternates A, B (A first on ties) -> 4 each. A's running jobs come first
  // in its FIFO, so a1..a4 renew on their devices and a5..a8 are preempted;
  // b1..b4 start at 900. No restart overhead, so GPU-seconds are exact at
  // the 1000 s horizon: a1..a4 1000, a5..a8 900, b1..b4 100.
  Cluster c = slow_cluster({{8, 16.0, 64.0}});
  std::vector<JobSpec> jobs;
  for (int k = 1; k <= 8; ++k) jobs.push_back(job("a" + std::to_string(k), "A", 1, 0));
  for (int k = 1; k <= 8; ++k) jobs.push_back(job("b" + std::to_string(k), "B", 1, 100));
  Workload w = workload(jobs, {{"A", 1.0}, {"B", 1.0}});
  ClusterModel model = bind_model(c, linear_profile(), w, 0.0);
  auto policy = make_round_policy("drf", {});
  SimOptions so;
  so.horizon_s = 1000;
  SimResult r = simulate(model, w, *policy, so);
  for (int k = 1; k <= 8; ++k) {
    const std::string a = "a" + std::to_string(k), b = "b" + std::to_string(k);
    EXPECT_NEAR(rec(r, a).attained_gpu_seconds, k <= 4 ? 1000.0 : 900.0, 1e-6) << a;
    EXPECT_EQ(rec(r, a).preemptions, k <= 4 ? 0 : 1) << a;
    EXPECT_EQ(rec(r, a).restarts, 0) << a;
    if (k <= 4) {
      EXPECT_NEAR(rec(r, b).first_start, 900.0, 1e-6) << b;
      EXPECT_NEAR(rec(r, b).attained_gpu_seconds, 100.0, 1e-6) << b;
    } else {
      EXPECT_TRUE(std::isnan(rec(r, b).first_start)) << b;
    }
  }
}

// Runs drf and checks after every plan that the leases running on (unexpired
// ones plus the plan's) hold at most the cluster's CPUs and memory.
class CheckedDrf final : public RoundPolicy {
 public:
  explicit CheckedDrf(RoundPolicyOptions o) : inner_(make_round_policy("drf", o)) {}
  std::string_view name() const override { return inner_->name(); }
  double interval() const override { return inner_->interval(); }
  RoundPlan plan(const SchedulerState& s) override {
    RoundPlan p = inner_->plan(s);
    double cpus = 0, memory = 0, capacity_cpus = 0, capacity_memory = 0;
    for (const Node& n : s.model->cluster.nodes) {
      capacity_cpus += n.cpus;
      capacity_memory += n.memory_gb;
    }
    std::set<std::size_t> planned;
    for (const Assignment& a : p.run) planned.insert(a.job);
    for (std::size_t i : s.running)
      if (!s.lease_ended(s.jobs[i]) && !planned.count(i)) planned.insert(i);
    for (std::size_t i : planned) {
      cpus += s.jobs[i].cpus;
      memory += s.jobs[i].memory_gb;
    }
    max_cpus = std::max(max_cpus, cpus);
    EXPECT_LE(cpus, capacity_cpus + 1e-9) << "at " << s.now;
    EXPECT_LE(memory, capacity_memory + 1e-9) << "at " << s.now;
    return p;
  }
  double max_cpus = 0;

 private:
  std::unique_ptr<RoundPolicy> inner_;
};

TEST(Drf, NeverOverbooksCpusOrMemoryAndFinishesEveryJob) {
  // The paper's cluster with jobs of mixed demands arriving over time and
  // 300 s leases: every job finishes with its work done, and no point books
  // more than 9 CPUs or 18 GB although GPUs never bind.
  Cluster c = paper_cluster();
  std::vector<JobSpec> jobs;
  const double demands[][3] = {{1, 1, 4}, {1, 3, 1}, {2, 2, 2}, {1, 0.5, 9}, {4, 4, 4}};
  for (int k = 0; k < 30; ++k) {
    const auto& d = demands[k % 5];
    JobSpec j = job("j" + std::to_string(k), "t" + std::to_string(k % 3), static_cast<int>(d[0]),
                    37.0 * k, d[1], d[2]);
    j.iterations = 500.0 * (1 + k % 4) * d[0];
    jobs.push_back(j);
  }
  Workload w = workload(jobs, {{"t0", 1.0}, {"t1", 2.0}, {"t2", 1.0}});
  ClusterModel model = bind_model(c, linear_profile(), w, 10.0);
  RoundPolicyOptions o;
  o.set("lease", "300");
  CheckedDrf policy(o);
  SimResult r = simulate(model, w, policy);
  for (const auto& j : r.jobs) {
    ASSERT_FALSE(std::isnan(j.finish)) << j.id;
    EXPECT_DOUBLE_EQ(j.done, j.work) << j.id;
  }
  // CPUs do bind: some point books more than half the 9 CPUs.
  EXPECT_GT(policy.max_cpus, 4.5);
}

TEST(Drf, JobLargerThanTheClusterIsAnInputError) {
  Workload w = workload({job("small", "A", 1, 0, 1.0, 1.0), job("huge", "B", 1, 0, 10.0, 1.0)},
                        {{"A", 1.0}, {"B", 1.0}});
  ClusterModel model = bind_model(paper_cluster(), linear_profile(), w, 10.0);
  auto policy = make_round_policy("drf", {});
  try {
    simulate(model, w, *policy);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "job huge: cpus");
    EXPECT_NE(e.problem().find("needs 10 but the cluster's GPU nodes have 9"), std::string::npos)
        << e.what();
  }
}

// ---- readers ------------------------------------------------------------------

std::string temp_file(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/fairgpu-drf-test-" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(DrfTrace, NativeColumnsReadAndRoundTrip) {
  std::string path = temp_file("good.csv",
                               "job_id,tenant,job_type,num_workers,arrival_s,iterations,cpus,"
                               "memory_gb\n"
                               "j1,A,lin,2,0,100,6.5,24\n"
                               "j2,A,lin,1,5,100,,\n"
                               "j3,B,lin,1,9,100,0,1e3\n");
  Workload w = read_native_trace(path);
  ASSERT_EQ(w.jobs.size(), 3u);
  EXPECT_DOUBLE_EQ(w.jobs[0].cpus, 6.5);
  EXPECT_DOUBLE_EQ(w.jobs[0].memory_gb, 24.0);
  EXPECT_TRUE(std::isnan(w.jobs[1].cpus));
  EXPECT_TRUE(std::isnan(w.jobs[1].memory_gb));
  EXPECT_DOUBLE_EQ(w.jobs[2].cpus, 0.0);  // 0 is a demand, not "unset"
  EXPECT_DOUBLE_EQ(w.jobs[2].memory_gb, 1000.0);

  std::string text = write_native_trace(w);
  EXPECT_EQ(text,
            "job_id,tenant,job_type,num_workers,arrival_s,iterations,duration_s,weight,cpus,"
            "memory_gb\n"
            "j1,A,lin,2,0,100,,1,6.5,24\n"
            "j2,A,lin,1,5,100,,1,,\n"
            "j3,B,lin,1,9,100,,1,0,1000\n");
  EXPECT_EQ(write_native_trace(read_native_trace(temp_file("again.csv", text))), text);

  // Unset demands resolve GPU-proportionally at run time: 8 GPUs, 16 CPUs,
  // 64 GB -> j2 (1 GPU) gets 2 CPUs and 8 GB.
  ClusterModel model = bind_model(slow_cluster({{8, 16.0, 64.0}}), linear_profile(), w, 10.0);
  SchedulerState s = make_scheduler_state(model, w);
  EXPECT_DOUBLE_EQ(s.jobs[1].cpus, 2.0);
  EXPECT_DOUBLE_EQ(s.jobs[1].memory_gb, 8.0);
  EXPECT_DOUBLE_EQ(s.jobs[0].cpus, 6.5);
}

struct BadCell {
  const char* name;
  const char* row;  // line 3 of the file
  const char* field;
  const char* problem;
};

class DrfTraceBad : public testing::TestWithParam<BadCell> {};

TEST_P(DrfTraceBad, OneLineErrorNamesFileLineAndField) {
  const BadCell& c = GetParam();
  std::string path = temp_file(std::string(c.name) + ".csv",
                               "job_id,tenant,job_type,num_workers,arrival_s,iterations,cpus,"
                               "memory_gb\n"
                               "ok,A,lin,1,0,100,1,1\n" +
                                   std::string(c.row) + "\n");
  try {
    read_native_trace(path);
    FAIL() << c.name << ": accepted";
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.source(), path + ":3") << what;
    EXPECT_EQ(e.field(), c.field) << what;
    EXPECT_NE(e.problem().find(c.problem), std::string::npos) << what;
    EXPECT_EQ(what.rfind(path + ":3: " + c.field + ": ", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cells, DrfTraceBad,
    testing::Values(
        BadCell{"negative_cpus", "j,A,lin,1,0,100,-1,1", "cpus", "must be >= 0, got '-1'"},
        BadCell{"nan_cpus", "j,A,lin,1,0,100,nan,1", "cpus", "finite"},
        BadCell{"word_cpus", "j,A,lin,1,0,100,lots,1", "cpus", "'lots' is not a number"},
        BadCell{"negative_memory", "j,A,lin,1,0,100,1,-0.5", "memory_gb",
                "must be >= 0, got '-0.5'"},
        BadCell{"nan_memory", "j,A,lin,1,0,100,1,NaN", "memory_gb", "finite"},
        BadCell{"inf_memory", "j,A,lin,1,0,100,1,inf", "memory_gb", "finite"}),
    [](const testing::TestParamInfo<BadCell>& p) { return std::string(p.param.name); });

TraceOptions one_type() {
  TraceOptions o;
  o.job_types = {"lin"};
  return o;
}

TEST(DrfTrace, AlibabaPodsCarryCpuAndMemoryRequests) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // openb-pod-0000: cpu_milli 12000, memory_mib 16384 -> 12 CPUs, 16 GB.
  // Over the 6203 pods read as jobs (num_gpu > 0, scheduled, ran > 0 s), awk
  // sums cpu_milli / 1000 = 57761.316 and memory_mib / 1024 = 211338.494141.
  Workload w = read_alibaba_trace(
      std::string(FAIRGPU_SHARED_DATA) + "/alibaba-gpu-v2023/openb_pod_list_default.csv",
      one_type());
  ASSERT_EQ(w.jobs.size(), 6203u);
  double cpus = 0, memory = 0;
  for (const JobSpec& j : w.jobs) {
    cpus += j.cpus;
    memory += j.memory_gb;
    if (j.id == "openb-pod-0000") {
      EXPECT_DOUBLE_EQ(j.cpus, 12.0);
      EXPECT_DOUBLE_EQ(j.memory_gb, 16.0);
    }
  }
  EXPECT_NEAR(cpus, 57761.316, 1e-6);
  EXPECT_NEAR(memory, 211338.494141, 1e-6);

  // Without the columns the demands stay unset; a bad cell names its line.
  Workload bare = read_alibaba_trace(
      temp_file("pods-bare.csv",
                "name,num_gpu,creation_time,scheduled_time,deletion_time\np0,1,0,0,50\n"),
      one_type());
  EXPECT_TRUE(std::isnan(bare.jobs[0].cpus));
  EXPECT_TRUE(std::isnan(bare.jobs[0].memory_gb));
  std::string bad = temp_file("pods-bad.csv",
                              "name,cpu_milli,memory_mib,num_gpu,creation_time,scheduled_time,"
                              "deletion_time\np0,1000,1024,1,0,0,50\np1,-5,1024,1,0,0,50\n");
  try {
    read_alibaba_trace(bad, one_type());
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), bad + ":3: cpu_milli: must be >= 0, got '-5'");
  }
}

}  // namespace
}  // namespace fairgpu
