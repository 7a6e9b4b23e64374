// Trace readers (fairgpu/workload.h): the native CSV (round trip, tenants,
// ordering), every Gavel .trace of the artifact, Alibaba's 2023 node and pod
// lists (counts checked against awk over the same files), and the malformed
// files under tests/data, each of which must name "<file>:<line>" and the
// column.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "fairgpu/cluster.h"
#include "fairgpu/input_error.h"
#include "fairgpu/profile.h"
#include "fairgpu/workload.h"

#include "test_files.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

using testing_support::test_data;
using testing_support::case_name;

const std::string kShared = FAIRGPU_SHARED_DATA;
const std::string kAlibaba = kShared + "/alibaba-gpu-v2023/";

std::string temp_file(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/fairgpu-trace-test-" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TraceOptions builtin_types(int tenants = 0, std::uint64_t seed = 1) {
  TraceOptions o;
  o.tenants = tenants;
  o.seed = seed;
  for (const auto& p : builtin_profiles().job_types) o.job_types.push_back(p.name);
  return o;
}

bool contains(const std::vector<std::string>& notes, const std::string& text) {
  for (const auto& n : notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

// ---- native CSV ---------------------------------------------------------------

TEST(NativeTrace, ReadsColumnsInAnyOrderAndSortsByArrival) {
  std::string path = temp_file("order.csv",
                               "tenant,job_id,job_type,arrival_s,num_workers,duration_s,"
                               "iterations,weight\r\n"
                               "bob,b1,A3C,30,2,600,,2\r\n"
                               "\r\n"
                               "alice,a1,CycleGAN,10,1,,5000,\r\n"
                               "bob,b2,A3C,10,4,,1e4,2\r\n"
                               "carol,c1,A3C,0,8,\"120\",,\r\n");
  Workload w = read_native_trace(path);
  ASSERT_EQ(w.jobs.size(), 4u);
  // Stable: a1 and b2 both arrive at 10, a1 comes first in the file.
  EXPECT_EQ(w.jobs[0].id, "c1");
  EXPECT_EQ(w.jobs[1].id, "a1");
  EXPECT_EQ(w.jobs[2].id, "b2");
  EXPECT_EQ(w.jobs[3].id, "b1");
  EXPECT_EQ(w.jobs[3].workers, 2);
  EXPECT_DOUBLE_EQ(w.jobs[3].duration_s, 600.0);
  EXPECT_TRUE(std::isnan(w.jobs[3].iterations));
  EXPECT_DOUBLE_EQ(w.jobs[2].iterations, 1e4);
  EXPECT_DOUBLE_EQ(w.jobs[0].duration_s, 120.0);
  EXPECT_DOUBLE_EQ(w.jobs[0].weight, 1.0);
  // Tenants in order of first appearance in the file, weights defaulting to 1.
  ASSERT_EQ(w.tenants.size(), 3u);
  EXPECT_EQ(w.tenants[0].name, "bob");
  EXPECT_DOUBLE_EQ(w.tenants[0].weight, 2.0);
  EXPECT_EQ(w.tenants[1].name, "alice");
  EXPECT_DOUBLE_EQ(w.tenants[1].weight, 1.0);
  EXPECT_EQ(w.tenants[2].name, "carol");
  EXPECT_TRUE(w.notes.empty());
}

TEST(NativeTrace, WriteThenReadRoundTrips) {
  Workload w;
  w.tenants = {{"a,b", 2.5}, {"c \"q\"", 1.0}};
  JobSpec j1;
  j1.id = "j1";
  j1.tenant = "a,b";
  j1.job_type = "ResNet-18 (batch size 64)";
  j1.workers = 4;
  j1.arrival_s = 0.1 + 0.2;
  j1.duration_s = 1.0 / 3.0;
  JobSpec j2;
  j2.id = "j2";
  j2.tenant = "c \"q\"";
  j2.job_type = "A3C";
  j2.arrival_s = 7.0;
  j2.iterations = 123456789.125;
  j2.weight = 3.0;
  w.jobs = {j1, j2};

  std::string text = write_native_trace(w);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "job_id,tenant,job_type,num_workers,arrival_s,iterations,duration_s,weight,"
            "priority_weight");
  Workload r = read_native_trace(temp_file("roundtrip.csv", text));
  ASSERT_EQ(r.jobs.size(), 2u);
  ASSERT_EQ(r.tenants.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.tenants[i].name, w.tenants[i].name);
    EXPECT_EQ(r.tenants[i].weight, w.tenants[i].weight);
    const JobSpec& a = w.jobs[i];
    const JobSpec& b = r.jobs[i];
    EXPECT_EQ(b.id, a.id);
    EXPECT_EQ(b.tenant, a.tenant);
    EXPECT_EQ(b.job_type, a.job_type);
    EXPECT_EQ(b.workers, a.workers);
    EXPECT_EQ(b.arrival_s, a.arrival_s);  // exact: shortest round-trip digits
    EXPECT_EQ(std::isnan(b.iterations), std::isnan(a.iterations));
    if (!std::isnan(a.iterations)) {
      EXPECT_EQ(b.iterations, a.iterations);
    }
    EXPECT_EQ(std::isnan(b.duration_s), std::isnan(a.duration_s));
    if (!std::isnan(a.duration_s)) {
      EXPECT_EQ(b.duration_s, a.duration_s);
    }
    EXPECT_EQ(b.weight, a.weight);
  }
  EXPECT_EQ(write_native_trace(r), text);
}

TEST(NativeTrace, PriorityColumnOnlyWhenNeeded) {
  Workload w;
  w.tenants = {{"t", 1.0}};
  JobSpec j;
  j.id = "x";
  j.tenant = "t";
  j.job_type = "A3C";
  j.iterations = 10;
  w.jobs = {j};
  EXPECT_EQ(write_native_trace(w),
            "job_id,tenant,job_type,num_workers,arrival_s,iterations,duration_s,weight\n"
            "x,t,A3C,1,0,10,,1\n");
}

// ---- malformed files -----------------------------------------------------------

enum class Reader { kNative, kGavel, kAlibabaPods, kAlibabaNodes };

struct BadFile {
  Reader reader;
  const char* file;
  int line;             // 0: the error names the file alone
  std::string field;    // exact InputError::field()
  std::string problem;  // a substring of the problem
};

class TraceBadInput : public testing::TestWithParam<BadFile> {};

TEST_P(TraceBadInput, NamesFileLineAndColumn) {
  const BadFile& c = GetParam();
  std::string path = test_data(c.file);
  std::string source = c.line > 0 ? path + ":" + std::to_string(c.line) : path;
  try {
    switch (c.reader) {
      case Reader::kNative:
        read_native_trace(path);
        break;
      case Reader::kGavel:
        read_gavel_trace(path, {});
        break;
      case Reader::kAlibabaPods:
        read_alibaba_trace(path, builtin_types());
        break;
      case Reader::kAlibabaNodes:
        read_alibaba_cluster(path, default_alibaba_gpu_map());
        break;
    }
    FAIL() << c.file << ": accepted";
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.source(), source) << what;
    EXPECT_EQ(e.field(), c.field) << what;
    EXPECT_NE(e.problem().find(c.problem), std::string::npos) << what;
    std::string prefix = source + ": " + (c.field.empty() ? "" : c.field + ": ");
    EXPECT_EQ(what.rfind(prefix, 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Files, TraceBadInput,
    testing::Values(
        BadFile{Reader::kNative, "bad-trace-missing-column.csv", 1, "arrival_s", "missing column"},
        BadFile{Reader::kNative, "bad-trace-column-count.csv", 3, "",
                "expected 8 comma-separated values"},
        BadFile{Reader::kNative, "bad-trace-non-numeric.csv", 3, "num_workers",
                "'four' is not a number"},
        BadFile{Reader::kNative, "bad-trace-nan.csv", 3, "arrival_s", "finite"},
        BadFile{Reader::kNative, "bad-trace-inf.csv", 3, "duration_s", "finite"},
        BadFile{Reader::kNative, "bad-trace-zero-workers.csv", 3, "num_workers",
                "must be >= 1, got '0'"},
        BadFile{Reader::kNative, "bad-trace-negative-workers.csv", 3, "num_workers", "got '-2'"},
        BadFile{Reader::kNative, "bad-trace-fractional-workers.csv", 3, "num_workers",
                "whole number"},
        BadFile{Reader::kNative, "bad-trace-negative-arrival.csv", 3, "arrival_s", ">= 0"},
        BadFile{Reader::kNative, "bad-trace-zero-iterations.csv", 3, "iterations", "> 0"},
        BadFile{Reader::kNative, "bad-trace-negative-duration.csv", 3, "duration_s", "> 0"},
        BadFile{Reader::kNative, "bad-trace-both-work.csv", 3, "iterations", "not both"},
        BadFile{Reader::kNative, "bad-trace-no-work.csv", 3, "iterations",
                "give iterations or duration_s"},
        BadFile{Reader::kNative, "bad-trace-duplicate-id.csv", 4, "job_id",
                "duplicate job_id 'j1' (first on line 2)"},
        BadFile{Reader::kNative, "bad-trace-unknown-column.csv", 1, "gpus", "unknown column"},
        BadFile{Reader::kNative, "bad-trace-tenant-weight.csv", 4, "weight",
                "tenant 'alice' has weight 1 on line 2"},
        BadFile{Reader::kNative, "bad-trace-empty.csv", 0, "", "no jobs"},
        BadFile{Reader::kNative, "bad-trace-no-header.csv", 1, "header", "missing header line"},
        BadFile{Reader::kNative, "bad-trace-zero-weight.csv", 3, "weight", "must be in [0.0001, 10000], got '0'"},
        BadFile{Reader::kNative, "bad-trace-empty-tenant.csv", 3, "tenant", "missing value"},
        BadFile{Reader::kGavel, "bad-gavel-column-count.trace", 2, "",
                "expected 10 tab-separated columns"},
        BadFile{Reader::kGavel, "bad-gavel-total-steps.trace", 2, "total_steps",
                "'many' is not a number"},
        BadFile{Reader::kGavel, "bad-gavel-scale-factor.trace", 3, "scale_factor", "got '0'"},
        BadFile{Reader::kGavel, "bad-gavel-arrival.trace", 2, "arrival_time", ">= 0"},
        BadFile{Reader::kGavel, "bad-gavel-empty.trace", 0, "", "no jobs"},
        BadFile{Reader::kAlibabaNodes, "bad-alibaba-node-model.csv", 4, "model",
                "GPU model 'H100' has no GPU type; map it to one, e.g. H100=v100"},
        BadFile{Reader::kAlibabaNodes, "bad-alibaba-node-no-model.csv", 3, "model",
                "needs its GPU model"},
        BadFile{Reader::kAlibabaNodes, "bad-alibaba-node-cpu-only.csv", 0, "gpu",
                "no GPU nodes (2 CPU-only nodes)"},
        BadFile{Reader::kAlibabaPods, "bad-alibaba-pod-deleted-early.csv", 3, "deletion_time",
                "150 is before scheduled_time 200"},
        BadFile{Reader::kAlibabaPods, "bad-alibaba-pod-num-gpu.csv", 3, "num_gpu",
                "'two' is not a number"},
        BadFile{Reader::kAlibabaPods, "bad-alibaba-pod-no-gpu-job.csv", 0, "num_gpu",
                "no GPU job to replay (1 CPU-only pods, 1 never scheduled"},
        BadFile{Reader::kAlibabaPods, "bad-alibaba-pod-gpu-milli.csv", 3, "gpu_milli",
                "must be <= 1000, got '1500'"}),
    [](const testing::TestParamInfo<BadFile>& p) { return case_name(p.param.file); });

TEST(TraceBadInput, MissingFiles) {
  std::string path = testing::TempDir() + "/fairgpu-no-such-trace.csv";
  for (int reader = 0; reader < 4; ++reader) {
    try {
      if (reader == 0) read_native_trace(path);
      if (reader == 1) read_gavel_trace(path, {});
      if (reader == 2) read_alibaba_trace(path, builtin_types());
      if (reader == 3) read_alibaba_cluster(path, default_alibaba_gpu_map());
      FAIL() << "reader " << reader << " accepted a missing file";
    } catch (const InputError& e) {
      EXPECT_EQ(e.source(), path);
      EXPECT_NE(e.problem().find("cannot open"), std::string::npos) << e.what();
    }
  }
}

// ---- Gavel ---------------------------------------------------------------------

TEST(GavelTrace, ReadsEveryArtifactTrace) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // Line counts from `wc -l` (every line is a job).
  const std::map<std::string, std::size_t> lines = {
      {"artifact_evaluation", 15}, {"debug", 14},     {"max_min_fairness", 96}, {"medium_test", 20},
      {"minimize_makespan", 100},  {"small_test", 20}};
  for (const auto& [name, n] : lines) {
    Workload w = read_gavel_trace(kShared + "/gavel/" + name + ".trace", {});
    EXPECT_EQ(w.jobs.size(), n) << name;
    EXPECT_EQ(w.tenants.size(), n) << name;  // each job its own tenant
    for (const JobSpec& j : w.jobs) {
      EXPECT_EQ(j.tenant, j.id) << name;
      EXPECT_TRUE(std::isnan(j.duration_s)) << name;
      EXPECT_GT(j.iterations, 0) << name;
    }
    EXPECT_TRUE(w.notes.empty()) << name;  // no SLOs in the artifact
  }
}

TEST(GavelTrace, MapsColumnsToJobFields) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  Workload w = read_gavel_trace(kShared + "/gavel/max_min_fairness.trace", {});
  ASSERT_EQ(w.jobs.size(), 96u);
  // Line 1: ResNet-18 (batch size 128), 925982 steps, scale factor 4, arrival 0.
  EXPECT_EQ(w.jobs[0].id, "job-0");
  EXPECT_EQ(w.jobs[0].job_type, "ResNet-18 (batch size 128)");
  EXPECT_DOUBLE_EQ(w.jobs[0].iterations, 925982);
  EXPECT_EQ(w.jobs[0].workers, 4);
  // Line 37, the first to arrive after 0: ResNet-50 (batch size 64), 28657
  // steps, 1 worker, priority weight 1, arrival 536.
  const JobSpec& j = w.jobs[36];
  EXPECT_EQ(j.id, "job-36");
  EXPECT_EQ(j.job_type, "ResNet-50 (batch size 64)");
  EXPECT_DOUBLE_EQ(j.iterations, 28657);
  EXPECT_EQ(j.workers, 1);
  EXPECT_DOUBLE_EQ(j.weight, 1.0);
  EXPECT_DOUBLE_EQ(j.arrival_s, 536);
  EXPECT_DOUBLE_EQ(w.jobs.back().arrival_s, 46317);
}

TEST(GavelTrace, TenantsRoundRobinWhenAsked) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  TraceOptions o;
  o.tenants = 3;
  Workload w = read_gavel_trace(kShared + "/gavel/small_test.trace", o);
  ASSERT_EQ(w.tenants.size(), 3u);
  EXPECT_EQ(w.tenants[0].name, "t0");
  EXPECT_EQ(w.tenants[2].name, "t2");
  EXPECT_EQ(w.jobs[4].tenant, "t1");  // all arrive at 0: file order kept
}

TEST(GavelTrace, PriorityWeightAndSloAreRead) {
  std::string path = temp_file("prio.trace",
                               "A3C\tcmd\tdir\t-n\t0\t500\t2\t3.5\t1200\t10\n"
                               "A3C\tcmd\tdir\t-n\t1\t700\t1\t1\t-1\t5\n");
  Workload w = read_gavel_trace(path, {});
  ASSERT_EQ(w.jobs.size(), 2u);
  EXPECT_EQ(w.jobs[0].id, "job-1");  // arrives first
  EXPECT_EQ(w.jobs[1].id, "job-0");
  EXPECT_DOUBLE_EQ(w.jobs[1].weight, 3.5);
  EXPECT_EQ(w.jobs[1].workers, 2);
  ASSERT_EQ(w.notes.size(), 1u);
  EXPECT_NE(w.notes[0].find("1 jobs have an SLO"), std::string::npos) << w.notes[0];
}

// ---- Alibaba -------------------------------------------------------------------

TEST(AlibabaTrace, GpuNodeListBecomesTheCluster) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  Cluster c =
      read_alibaba_cluster(kAlibaba + "openb_node_list_gpu_node.csv", default_alibaba_gpu_map());
  // awk -F, 'NR>1 {s += $4; n++} END {print s, n}': 6212 GPUs on 1213 nodes.
  EXPECT_EQ(c.total_gpus(), 6212);
  EXPECT_EQ(c.nodes.size(), 1213u);
  // P100 (265) + T4 (842) -> p100; V100M16, V100M32, A10, G2, G3 -> v100.
  EXPECT_EQ(c.gpu_types, (std::vector<std::string>{"p100", "v100"}));
  EXPECT_EQ(c.capacity(), (std::vector<int>{265 + 842, 195 + 204 + 2 + 4392 + 312}));
  EXPECT_EQ(c.nodes[0].name, "openb-node-0000");
  EXPECT_DOUBLE_EQ(c.nodes[0].cpus, 64.0);
  EXPECT_DOUBLE_EQ(c.nodes[0].memory_gb, 256.0);
  EXPECT_FALSE(contains(c.notes, "CPU-only"));
  EXPECT_TRUE(contains(c.notes, "T4 -> p100 (404 nodes)"));
}

TEST(AlibabaTrace, CpuOnlyNodesAreCountedAndSkipped) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  Cluster c =
      read_alibaba_cluster(kAlibaba + "openb_node_list_all_node.csv", default_alibaba_gpu_map());
  EXPECT_EQ(c.total_gpus(), 6212);
  EXPECT_EQ(c.nodes.size(), 1523u - 310u);
  EXPECT_TRUE(contains(c.notes, "310 CPU-only nodes (gpu = 0) skipped"));
}

TEST(AlibabaTrace, UnmappedModelCanBeMapped) {
  auto map = default_alibaba_gpu_map();
  map["H100"] = "h100";
  Cluster c = read_alibaba_cluster(test_data("bad-alibaba-node-model.csv"), map);
  EXPECT_EQ(c.gpu_types, (std::vector<std::string>{"p100", "h100"}));
  EXPECT_EQ(c.total_gpus(), 10);
}

TEST(AlibabaTrace, DefaultPodListGpuJobs) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  Workload w = read_alibaba_trace(kAlibaba + "openb_pod_list_default.csv", builtin_types());
  // awk -F, 'NR>1 && $4>0' -> 7064 GPU pods, of which 861 (all Pending) have no
  // scheduled_time ($11 == ""); none has deletion_time <= scheduled_time.
  EXPECT_EQ(w.jobs.size(), 7064u - 861u);
  EXPECT_EQ(w.tenants.size(), w.jobs.size());  // each pod its own tenant
  EXPECT_TRUE(contains(w.notes, "6203 GPU pods read as jobs"));
  EXPECT_TRUE(contains(w.notes, "1088 CPU-only pods (num_gpu = 0) skipped"));
  EXPECT_TRUE(contains(w.notes, "861 GPU pods skipped: never scheduled"));
  EXPECT_TRUE(contains(w.notes, "pod_phase: 861 Pending"));
  // awk: num_gpu == 1, gpu_milli < 1000, scheduled: 2573.
  EXPECT_TRUE(contains(w.notes, "2573 fractional-GPU pods"));
  EXPECT_FALSE(contains(w.notes, "gpu_spec"));
  std::map<int, std::size_t> by_workers;
  for (const JobSpec& j : w.jobs) ++by_workers[j.workers];
  // awk ... {print $4} | sort | uniq -c over the scheduled GPU pods.
  EXPECT_EQ(by_workers, (std::map<int, std::size_t>{{1, 6129}, {2, 15}, {4, 15}, {8, 44}}));
  // openb-pod-0017: 8 GPUs, created 9437497, scheduled 9437497, deleted 10769854.
  const JobSpec* pod17 = nullptr;
  for (const JobSpec& j : w.jobs)
    if (j.id == "openb-pod-0017") pod17 = &j;
  ASSERT_NE(pod17, nullptr);
  EXPECT_EQ(pod17->workers, 8);
  EXPECT_EQ(pod17->tenant, "openb-pod-0017");
  EXPECT_DOUBLE_EQ(pod17->arrival_s, 9437497);
  EXPECT_DOUBLE_EQ(pod17->duration_s, 10769854.0 - 9437497.0);
  EXPECT_TRUE(std::isnan(pod17->iterations));
  for (std::size_t i = 1; i < w.jobs.size(); ++i)
    ASSERT_LE(w.jobs[i - 1].arrival_s, w.jobs[i].arrival_s);
}

TEST(AlibabaTrace, JobTypesAreSeededDrawsAndTenantsRoundRobin) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  std::string path = kAlibaba + "openb_pod_list_gpuspec33.csv";
  Workload a = read_alibaba_trace(path, builtin_types(4, 7));
  Workload b = read_alibaba_trace(path, builtin_types(4, 7));
  Workload c = read_alibaba_trace(path, builtin_types(4, 8));
  ASSERT_EQ(a.jobs.size(), 6203u);
  EXPECT_EQ(write_native_trace(a), write_native_trace(b));
  EXPECT_NE(write_native_trace(a), write_native_trace(c));
  std::map<std::string, std::size_t> types;
  for (const JobSpec& j : a.jobs) ++types[j.job_type];
  EXPECT_EQ(types.size(), builtin_profiles().job_types.size());
  for (const auto& [name, n] : types)  // 6203 / 8 = 775 each on average
    EXPECT_NEAR(static_cast<double>(n), 6203.0 / 8, 100) << name;
  ASSERT_EQ(a.tenants.size(), 4u);
  EXPECT_EQ(a.tenants[3].name, "t3");
  // awk: scheduled GPU pods with a gpu_spec: 2092.
  EXPECT_TRUE(contains(a.notes, "2092 pods' GPU model constraints (gpu_spec) ignored"));
}

TEST(AlibabaTrace, PodListWithoutTimesNamesTheMissingColumn) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  std::string path = kAlibaba + "openb_pod_list_multigpu50.csv";
  try {
    read_alibaba_trace(path, builtin_types());
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), path + ":1");
    EXPECT_EQ(e.field(), "creation_time");
    EXPECT_NE(e.problem().find("cannot be replayed"), std::string::npos) << e.what();
  }
}

TEST(AlibabaTrace, ZeroRunPodsAreCountedAndNeedJobTypes) {
  std::string path = temp_file("pods.csv",
                               "name,num_gpu,creation_time,deletion_time,scheduled_time\n"
                               "p0,1,0,100,0\n"
                               "p1,2,5,50,50\n"
                               "p2,0,5,50,50\n");
  Workload w = read_alibaba_trace(path, builtin_types());
  ASSERT_EQ(w.jobs.size(), 1u);
  EXPECT_DOUBLE_EQ(w.jobs[0].duration_s, 100.0);
  EXPECT_TRUE(contains(w.notes, "1 GPU pods skipped: ran 0 s"));
  EXPECT_TRUE(contains(w.notes, "1 CPU-only pods"));
  TraceOptions none;
  try {
    read_alibaba_trace(path, none);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "job_types");
  }
}

}  // namespace
}  // namespace fairgpu
