// Synergy (OSDI'22; specs/synergy.md): its readers, the sensitivity
// multiplier in the simulator, TUNE's guarantee on random placements,
// TUNE/GREEDY/proportional on a hand-derived server, OPT's stages against
// exhaustive search, compat mode's first rounds of the static 100-job trace
// against a hand check, determinism and bad input.
#include "fairgpu/synergy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "fairgpu/input_error.h"
#include "fairgpu/resource_report.h"
#include "fairgpu/scenario.h"
#include "fairgpu/sim_report.h"
#include "fairgpu/simulator.h"
#include "policy/synergy.h"
#include "run_binary.h"
#include "test_files.h"
#include "trace/text_input.h"

namespace fairgpu {
namespace {

using testing_support::run_binary;
using testing_support::source_path;

const std::string kDir = source_path("../shared/data/synergy/");

const ProfileCatalogue& synergy_profiles() {
  static const ProfileCatalogue c = parse_synergy_profiles(
      text_input::read_text_file(kDir + "profiles.json"), kDir + "profiles.json");
  return c;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// A cluster of `nodes` Synergy servers (8 GPUs, 24 CPUs, 500 GB unless given).
Cluster servers(int nodes, int gpus = 8, double cpus = 24, double memory = 500) {
  Cluster c;
  c.gpu_types = {kSynergyGpuType};
  for (int i = 0; i < nodes; ++i)
    c.nodes.push_back({"s" + std::to_string(i), 0, gpus, cpus, memory});
  return c;
}

Workload jobs_of(const std::vector<std::pair<std::string, int>>& models, double iterations = 1e6) {
  std::vector<JobSpec> jobs;
  for (std::size_t i = 0; i < models.size(); ++i) {
    JobSpec j;
    j.id = std::to_string(i);
    j.tenant = "job-" + j.id;
    j.job_type = models[i].first;
    j.workers = models[i].second;
    j.arrival_s = 0.0;
    j.iterations = iterations;
    jobs.push_back(j);
  }
  return text_input::make_workload(std::move(jobs));
}

// The state at time 0 with every job arrived, and the plan `policy` makes.
struct Planned {
  ClusterModel model;
  Workload workload;
  SchedulerState state;
  RoundPlan plan;
};
std::unique_ptr<Planned> plan_once(const Cluster& c, const Workload& w, const std::string& policy) {
  auto p = std::make_unique<Planned>();
  p->workload = w;
  p->model = bind_model(c, synergy_profiles(), p->workload, 10.0);
  p->state = make_scheduler_state(p->model, p->workload);
  for (std::size_t i = 0; i < p->state.jobs.size(); ++i) admit_job(p->state, i);
  p->plan = make_round_policy(policy, {})->plan(p->state);
  validate_plan(p->plan, p->state);
  return p;
}

const Assignment* assignment_of(const RoundPlan& plan, std::size_t job) {
  for (const Assignment& a : plan.run)
    if (a.job == job) return &a;
  return nullptr;
}

// ---------------------------------------------------------------- readers

TEST(Synergy, ProfilesReader) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  const ProfileCatalogue& c = synergy_profiles();
  const JobTypeProfile* alexnet = c.find("alexnet");
  ASSERT_NE(alexnet, nullptr);
  EXPECT_TRUE(c.find("m5") && c.find("gnmt") && c.find("deepspeech"));
  const SensitivityTable* t = alexnet->sensitivity_on(kSynergyGpuType);
  ASSERT_NE(t, nullptr);
  EXPECT_DOUBLE_EQ(t->at(3, 62.5), 1.0);    // the proportional cell
  EXPECT_DOUBLE_EQ(t->at(12, 125), 2.94);   // best-case demand
  EXPECT_DOUBLE_EQ(t->at(24, 20.83), 0.1);  // the 20.83 GB column
  EXPECT_DOUBLE_EQ(t->at(3.5, 100), 1.0);   // between grid points: the lower cell
  EXPECT_DOUBLE_EQ(t->at(0.5, 10), 0.1);    // below the grid: the first cell
  EXPECT_DOUBLE_EQ(t->best_cpu_per_gpu, 12);
  EXPECT_DOUBLE_EQ(t->best_memory_gb_per_gpu, 125);
  EXPECT_DOUBLE_EQ(t->speedup, 2.94);
  // Rate 1 / iter_time at any GPU count (Synergy's simulator), no cross-node cost.
  EXPECT_NEAR(alexnet->rate(kSynergyGpuType, 1, false), 1 / 0.6, 1e-12);
  EXPECT_NEAR(alexnet->rate(kSynergyGpuType, 8, true), 1 / 0.6, 1e-12);
}

TEST(Synergy, TraceAndClusterReaders) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  const Workload w = read_synergy_trace(kDir + "static-100-jobs.csv", {});
  ASSERT_EQ(w.jobs.size(), 100u);
  EXPECT_EQ(w.jobs[0].id, "0");
  EXPECT_EQ(w.jobs[0].job_type, "alexnet");
  EXPECT_DOUBLE_EQ(w.jobs[0].iterations, 3349);
  EXPECT_EQ(w.jobs[0].workers, 1);
  EXPECT_DOUBLE_EQ(w.jobs[3].arrival_s, 0.003);
  const Cluster c = read_synergy_cluster_ini(kDir + "static_trace.ini");
  ASSERT_EQ(c.nodes.size(), 4u);
  EXPECT_EQ(c.nodes[3].gpus, 8);
  EXPECT_DOUBLE_EQ(c.nodes[3].cpus, 24);
  EXPECT_DOUBLE_EQ(c.nodes[3].memory_gb, 500);
  EXPECT_EQ(read_synergy_cluster_ini(kDir + "default_cluster.ini").total_gpus(), 128);
  EXPECT_EQ(read_synergy_cluster_ini(kDir + "philly_cluster.ini").total_gpus(), 512);
}

// One line naming file, line and field.
void expect_input_error(const std::function<void()>& f, const std::string& where,
                        const std::string& field) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << where << ": " << field;
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), where) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

TEST(Synergy, BadInput) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  std::string text = text_input::read_text_file(kDir + "profiles.json");
  // A grid that is not increasing.
  auto doc = text_input::parse_json(text, "p.json");
  auto bad = doc;
  bad["cpu_grid_per_gpu"][1] = 3;
  bad["cpu_grid_per_gpu"][2] = 2;
  expect_input_error([&] { parse_synergy_profiles(bad.dump(), "p.json"); }, "p.json",
                     "cpu_grid_per_gpu[2]");
  // A model without its table.
  doc["by_cpus_per_gpu"]["3"]["res50"].erase("tput");
  expect_input_error([&] { parse_synergy_profiles(doc.dump(), "p.json"); }, "p.json",
                     "by_cpus_per_gpu.3.res50.tput");
  // Trace: a bad GPU count, with its line.
  const std::string trace = write_temp("bad.csv", "0,alexnet,0,100,1\n1,res18,5,100,0\n");
  expect_input_error([&] { read_synergy_trace(trace, {}); }, trace + ":2", "gpus");
  const std::string dup = write_temp("dup.csv", "0,alexnet,0,100,1\n0,res18,5,100,1\n");
  expect_input_error([&] { read_synergy_trace(dup, {}); }, dup + ":2", "job_id");
  // Cluster .ini: an unknown key, a missing one.
  expect_input_error(
      [&] { parse_synergy_cluster_ini("[CLUSTER]\nracks = 1\ngpu_per_server = 8\n", "c.ini"); },
      "c.ini:3", "gpu_per_server");
  expect_input_error([&] { parse_synergy_cluster_ini("[CLUSTER]\nracks = 1\n", "c.ini"); }, "c.ini",
                     "servers_per_rack");
  // A demand larger than every server: alexnet wants 12 CPUs per GPU.
  const std::string small = write_temp(
      "small.ini",
      "[CLUSTER]\nracks = 1\nservers_per_rack = 2\ngpus_per_server = 4\ncpus_per_server = "
      "8\ndram_per_server = 500\n");
  ScenarioOptions o;
  o.cluster_path = small;
  o.profiles_path = kDir + "profiles.json";
  o.trace_path = kDir + "static-100-jobs.csv";
  expect_input_error([&] { load_scenario(o); }, kDir + "profiles.json",
                     "by_cpus_per_gpu.3.alexnet.cpu_per_gpu");
  // A trace model the profiles lack names the trace.
  const std::string unknown = write_temp("unknown.csv", "0,vgg99,0,100,1\n");
  o.cluster_path = kDir + "static_trace.ini";
  o.trace_path = unknown;
  try {
    load_scenario(o);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), unknown) << e.what();
  }
}

// ------------------------------------------------------- simulator model

TEST(Synergy, SimulatorAppliesTheMultiplierOfWhatAJobHolds) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // One alexnet job of 2940 iterations at 0.6 s each: proportional (3 CPUs,
  // 62.5 GB) -> 1764 s after the 10 s restart; TUNE gives it its best-case
  // 12 CPUs / 125 GB -> 2.94x: 600 s + 10 s.
  const Cluster c = servers(1);
  const Workload w = jobs_of({{"alexnet", 1}}, 2940);
  ClusterModel m = bind_model(c, synergy_profiles(), w, 10.0);
  auto prop = make_round_policy("synergy-proportional", {});
  auto tune = make_round_policy("synergy-tune", {});
  const SimResult a = simulate(m, w, *prop);
  const SimResult b = simulate(m, w, *tune);
  EXPECT_NEAR(a.jobs[0].finish, 10 + 2940 * 0.6, 1e-6);
  EXPECT_NEAR(b.jobs[0].finish, 10 + 600, 1e-6);
  // Per-job speedup received and the CPU/memory series.
  EXPECT_NEAR(b.jobs[0].multiplier_seconds / (b.jobs[0].attained_gpu_seconds), 2.94, 1e-9);
  EXPECT_NEAR(b.rounds[0].cpus_allocated, 12.0, 1e-9);
  EXPECT_NEAR(b.rounds[0].memory_gb_allocated, 125.0, 1e-9);
  EXPECT_NEAR(a.rounds[0].cpus_used, 3.0, 1e-9);
  EXPECT_NEAR(summarise_resources(b).avg_job_speedup, 2.94, 1e-9);
  EXPECT_NEAR(summarise_resources(a).avg_job_speedup, 1.0, 1e-9);
  EXPECT_NE(resources_csv(b).find("\n0,300,12,12,125,125\n"), std::string::npos)
      << resources_csv(b);
  // compat: no restart cost, finish at the end of the round in which the
  // work completes (600 s -> the round [300, 600) ends at 600; 601 -> 900).
  auto compat = make_round_policy("synergy-tune:mode=compat", {});
  EXPECT_NEAR(simulate(m, w, *compat).jobs[0].finish, 600, 1e-6);
  const Workload w2 = jobs_of({{"alexnet", 1}}, 2941);
  ClusterModel m2 = bind_model(c, synergy_profiles(), w2, 10.0);
  EXPECT_NEAR(simulate(m2, w2, *compat).jobs[0].finish, 900, 1e-6);
}

TEST(Synergy, RenewalWithOtherResourcesIsARestart) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // Round 1: alexnet alone at 12 CPUs (2.94x). Round 2: res18 arrives and
  // TUNE shrinks alexnet to the proportional 3 CPUs on the same GPU: a new
  // placement, which pays the restart overhead in paper mode.
  Cluster c = servers(1, 2, 6, 125);  // proportional 3 CPUs, 62.5 GB
  std::vector<JobSpec> jobs = jobs_of({{"alexnet", 1}, {"res18", 1}}).jobs;
  jobs[1].arrival_s = 100;
  Workload w = text_input::make_workload(std::move(jobs));
  ClusterModel m = bind_model(c, synergy_profiles(), w, 10.0);
  // alexnet's best case (12 CPUs) exceeds this server: capped at 6 CPUs /
  // 125 GB (the 6-CPU row: 1.75x in paper mode).
  auto tune = make_round_policy("synergy-tune", {});
  SimOptions o;
  o.horizon_s = 900;
  const SimResult r = simulate(m, w, *tune, o);
  EXPECT_EQ(r.jobs[0].restarts, 1);
  EXPECT_NEAR(r.jobs[0].overhead_seconds, 20.0, 1e-9);
  // Round 1 (0-300): 1.75x for 290 s; then 1.0x after another 10 s.
  EXPECT_NEAR(r.jobs[0].done, (290 * 1.75 + 590) / 0.6, 1e-6);
  auto compat = make_round_policy("synergy-tune:mode=compat", {});
  const SimResult rc = simulate(m, w, *compat, o);
  EXPECT_EQ(rc.jobs[0].restarts, 1);
  EXPECT_NEAR(rc.jobs[0].overhead_seconds, 0.0, 1e-9);
}

// --------------------------------------------------- TUNE on one server

TEST(Synergy, HandDerivedOneServer) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // One server of 4 GPUs, 12 CPUs, 250 GB (proportional: 3 CPUs, 62.5 GB).
  // Jobs: alexnet (best 12/125), res18 (9/62.5), gnmt, gnmt (1/20).
  // TUNE (paper, sorted by demand): alexnet gets 12/125; res18 fits neither
  // 9 nor 3 CPUs (none left), so alexnet is shrunk to 3/62.5 and res18 runs
  // at 3/62.5; the gnmts take 1/20 each.
  const Cluster c = servers(1, 4, 12, 250);
  const Workload w = jobs_of({{"alexnet", 1}, {"res18", 1}, {"gnmt", 1}, {"gnmt", 1}});
  struct Want {
    double cpus, memory;
  };
  auto check = [&](const std::string& policy, const std::vector<Want>& want) {
    SCOPED_TRACE(policy);
    auto p = plan_once(c, w, policy);
    for (std::size_t i = 0; i < want.size(); ++i) {
      const Assignment* a = assignment_of(p->plan, i);
      if (want[i].cpus < 0) {
        EXPECT_EQ(a, nullptr) << "job " << i;
        continue;
      }
      ASSERT_NE(a, nullptr) << "job " << i;
      ASSERT_EQ(a->resources.size(), 1u);
      EXPECT_NEAR(a->resources[0].cpus, want[i].cpus, 1e-9) << "job " << i;
      EXPECT_NEAR(a->resources[0].memory_gb, want[i].memory, 1e-9) << "job " << i;
    }
  };
  check("synergy-tune", {{3, 62.5}, {3, 62.5}, {1, 20}, {1, 20}});
  check("synergy-tune:mode=compat", {{3, 62.5}, {3, 62.5}, {1, 20}, {1, 20}});
  // GREEDY: alexnet's 12 CPUs leave none, so res18 and both gnmts wait
  // (three GPUs idle: the strawman's flaw).
  check("synergy-greedy", {{12, 125}, {-1, 0}, {-1, 0}, {-1, 0}});
  check("synergy-proportional", {{3, 62.5}, {3, 62.5}, {3, 62.5}, {3, 62.5}});
  // Without alexnet, res18 keeps its best case: 9 + 1 + 1 CPUs fit.
  const Workload w2 = jobs_of({{"res18", 1}, {"gnmt", 1}, {"gnmt", 1}});
  auto p = plan_once(c, w2, "synergy-tune");
  EXPECT_NEAR(assignment_of(p->plan, 0)->resources[0].cpus, 9.0, 1e-9);
}

TEST(Synergy, TuneShrinksACappedTwoGpuJob) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // Two servers of 4 GPUs / 12 CPUs / 250 GB; 8 GPUs asked for. By demand
  // (paper): gnmt x4 (1 CPU, 20 GB per GPU) takes server 0; res18 x2 (9 CPUs
  // per GPU, capped to the server: 6) takes 12 CPUs of server 1; the first
  // alexnet fits neither its 12 nor the proportional 3 CPUs there, so res18
  // is shrunk to 3 per GPU and alexnet runs at 3; the second alexnet takes
  // the last 3.
  const Cluster c = servers(2, 4, 12, 250);
  const Workload w = jobs_of({{"alexnet", 1}, {"alexnet", 1}, {"res18", 2}, {"gnmt", 4}});
  auto p = plan_once(c, w, "synergy-tune");
  ASSERT_EQ(p->plan.run.size(), 4u);
  auto held = [&](std::size_t job) {
    const Assignment* a = assignment_of(p->plan, job);
    EXPECT_EQ(a->resources.size(), 1u);
    return a->resources[0];
  };
  EXPECT_EQ(held(3).node, 0u);
  EXPECT_NEAR(held(3).cpus, 4, 1e-9);
  EXPECT_NEAR(held(3).memory_gb, 80, 1e-9);
  EXPECT_EQ(held(2).node, 1u);
  EXPECT_NEAR(held(2).cpus, 6, 1e-9);
  EXPECT_NEAR(held(2).memory_gb, 125, 1e-9);
  EXPECT_NEAR(held(0).cpus, 3, 1e-9);
  EXPECT_NEAR(held(1).cpus, 3, 1e-9);
  EXPECT_NEAR(held(1).memory_gb, 62.5, 1e-9);
}

TEST(Synergy, FirstFitIsSynergysGpuIndexOrder) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // Two servers of 4 GPUs; FIFO: a 1-GPU gnmt, then a 4-GPU gnmt. First fit
  // (compat: Synergy's code) takes GPUs in index order, so the 4-GPU job gets
  // server 0's last 3 GPUs and one of server 1; best fit keeps it whole on
  // server 1.
  const Cluster c = servers(2, 4, 12, 250);
  const Workload w = jobs_of({{"gnmt", 1}, {"gnmt", 4}});
  auto first = plan_once(c, w, "synergy-tune:mode=compat");
  auto best = plan_once(c, w, "synergy-tune:mode=compat:placement=best-fit");
  EXPECT_EQ(assignment_of(first->plan, 1)->resources.size(), 2u);
  ASSERT_EQ(assignment_of(best->plan, 1)->resources.size(), 1u);
  EXPECT_EQ(assignment_of(best->plan, 1)->resources[0].node, 1u);
}

// ---------------------------------------------- TUNE's guarantee, property

TEST(Synergy, TuneGuaranteeOnRandomPlacements) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // Random homogeneous clusters and job mixes (1-, 2-, 4- and 8-GPU jobs of
  // every model), random base orders, placements and modes: every job TUNE
  // places holds at least min(best-case demand, proportional share) of CPUs
  // and memory per GPU on each of its servers; no server gives out more than
  // it has; and TUNE runs every job the base order finds GPUs for.
  std::mt19937_64 rng(15);
  const std::vector<std::string> models = {"alexnet",    "res18",     "res50",       "mobilenet",
                                           "shufflenet", "gnmt",      "transformer", "lstm",
                                           "m5",         "deepspeech"};
  const std::vector<std::string> policies = {
      "synergy-tune",
      "synergy-tune:base=las:placement=first-fit",
      "synergy-tune:mode=compat",
      "synergy-tune:base=srtf:mode=compat:placement=best-fit",
      "synergy-tune:base=ftf",
      "synergy-tune:base=las:mode=compat"};
  int placed = 0, shrunk = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const int nodes = 1 + int(rng() % 4);
    const int gpus = 4 << (rng() % 2);
    const double cpus = gpus * (3 + double(rng() % 2));
    const double memory = gpus * 62.5;
    const Cluster c = servers(nodes, gpus, cpus, memory);
    std::vector<std::pair<std::string, int>> mix;
    const int n_jobs = 2 + int(rng() % (3 * nodes * gpus / 2));
    for (int k = 0; k < n_jobs; ++k) {
      const int g = std::min(nodes * gpus, std::vector<int>{1, 1, 1, 2, 4, 8}[rng() % 6]);
      mix.push_back({models[rng() % models.size()], g});
    }
    const Workload w = jobs_of(mix);
    const std::string policy = policies[trial % policies.size()];
    SCOPED_TRACE(policy + " trial " + std::to_string(trial));
    auto p = plan_once(c, w, policy);
    const double prop_cpus = cpus / gpus, prop_memory = memory / gpus;
    std::vector<double> cpu_used(nodes, 0.0), mem_used(nodes, 0.0);
    int gpus_given = 0;
    for (const Assignment& a : p->plan.run) {
      ++placed;
      const Job& j = p->state.jobs[a.job];
      const SensitivityTable* t =
          p->model.profiles.job_types[j.job_type].sensitivity_on(kSynergyGpuType);
      gpus_given += j.workers;
      for (const NodeResources& r : a.resources) {
        int on = 0;
        for (DeviceRef d : a.devices) on += d.node == r.node;
        ASSERT_GT(on, 0);
        const double floor_cpus = std::min(t->best_cpu_per_gpu, prop_cpus);
        const double floor_memory = std::min(t->best_memory_gb_per_gpu, prop_memory);
        EXPECT_GE(r.cpus / on, floor_cpus - 1e-9) << j.record.id;
        EXPECT_GE(r.memory_gb / on, floor_memory - 1e-9) << j.record.id;
        shrunk += r.cpus / on < t->best_cpu_per_gpu - 1e-9;
        cpu_used[r.node] += r.cpus;
        mem_used[r.node] += r.memory_gb;
      }
    }
    for (int n = 0; n < nodes; ++n) {
      EXPECT_LE(cpu_used[n], cpus + 1e-6);
      EXPECT_LE(mem_used[n], memory + 1e-6);
    }
    // Every job the GPU count admits (walking FIFO/LAS/... order) was placed:
    // at least as many GPUs as the greedy count over the arrival order gives
    // when all jobs are 1-GPU; in general, no job that would fit is left out.
    int free = nodes * gpus - gpus_given;
    for (std::size_t i = 0; i < p->state.jobs.size(); ++i) {
      if (!assignment_of(p->plan, i)) {
        EXPECT_GT(p->state.jobs[i].workers, free) << i;
      }
    }
  }
  EXPECT_GT(placed, 500);
  EXPECT_GT(shrunk, 100);  // the cases exercise the fall-backs
}

// ------------------------------------------------------------- OPT stages

TEST(Synergy, OptStage1MatchesExhaustiveSearch) {
  std::mt19937_64 rng(7);
  auto uniform = [&] { return text_input::unit_uniform(rng()); };
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 1 + int(rng() % 4);
    std::vector<policy::synergy::OptJob> jobs(n);
    for (auto& j : jobs) {
      j.gpus = 1 + int(rng() % 3);
      const int cells = 1 + int(rng() % 5);
      for (int c = 0; c < cells; ++c) {
        j.cells.push_back({double(1 + rng() % 6), 20.0 * double(1 + rng() % 5)});
        j.tput.push_back(std::round(100 * (0.5 + 2.5 * uniform())) / 100);
      }
    }
    const double cpus = double(4 + rng() % 30), memory = 50.0 + 10.0 * double(rng() % 40);
    // Exhaustive: every combination of cells.
    double best = -1;
    std::vector<std::size_t> pick(n, 0);
    for (;;) {
      double c = 0, m = 0, t = 0;
      for (int k = 0; k < n; ++k) {
        c += jobs[k].gpus * jobs[k].cells[pick[k]].cpus;
        m += jobs[k].gpus * jobs[k].cells[pick[k]].memory_gb;
        t += jobs[k].tput[pick[k]];
      }
      if (c <= cpus + 1e-9 && m <= memory + 1e-9) best = std::max(best, t);
      int k = 0;
      while (k < n && ++pick[k] == jobs[k].cells.size()) pick[k++] = 0;
      if (k == n) break;
    }
    const auto got = policy::synergy::solve_opt_stage1(jobs, cpus, memory);
    SCOPED_TRACE(trial);
    if (best < 0) {
      EXPECT_FALSE(got.solved);
      continue;
    }
    ASSERT_TRUE(got.solved);
    EXPECT_NEAR(got.tput, best, 1e-3 * best);  // within the MIP gap (1e-4) and tie-break
    double c = 0, m = 0;
    for (int k = 0; k < n; ++k) {
      c += jobs[k].gpus * jobs[k].cells[got.cell[k]].cpus;
      m += jobs[k].gpus * jobs[k].cells[got.cell[k]].memory_gb;
    }
    EXPECT_LE(c, cpus + 1e-6);
    EXPECT_LE(m, memory + 1e-6);
  }
}

TEST(Synergy, OptStage2MinimisesSplitJobs) {
  // Servers of 4 GPUs / 8 CPUs. A 4-GPU job at 2 CPUs/GPU fits server 1 whole
  // only if the 1-GPU jobs (4 CPUs each) both go to server 0: the optimum
  // uses 3 (job, server) pairs, no split.
  using policy::synergy::OptServer;
  const std::vector<OptServer> srv = {{4, 8, 100}, {4, 8, 100}};
  const auto x = policy::synergy::solve_opt_stage2({4, 1, 1}, {{2, 10}, {4, 10}, {4, 10}}, srv,
                                                   {{true, true}, {true, true}, {true, true}});
  ASSERT_EQ(x.size(), 3u);
  int pairs = 0;
  for (const auto& row : x)
    for (int v : row) pairs += v > 0;
  EXPECT_EQ(pairs, 3);
  EXPECT_EQ(x[1][0] + x[2][0], x[0][0] == 4 ? 0 : 2);
  // A 6-GPU job needs both servers; FFD finds no unsplit packing, so this is
  // the MILP's answer. Servers 4 GPUs / 12 CPUs and 4 GPUs / 8 CPUs; job 0:
  // 6 GPUs at 2 CPUs, job 1: 2 GPUs at 3 CPUs. Three pairs at least (job 0
  // on both, job 1 on one). Job 1 on server 1 would leave job 0 2 GPUs there
  // at 4 + 6 = 10 > 8 CPUs, so job 1 goes to server 0 with 2 of job 0's
  // (4 + 6 = 10 <= 12) and the other 4 of job 0 fill server 1 (8 CPUs).
  const std::vector<OptServer> uneven = {{4, 12, 100}, {4, 8, 100}};
  const auto split = policy::synergy::solve_opt_stage2({6, 2}, {{2, 10}, {3, 10}}, uneven,
                                                       {{true, true}, {true, true}});
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0], (std::vector<int>{2, 4}));
  EXPECT_EQ(split[1], (std::vector<int>{2, 0}));
  // Infeasible (12 GPUs' worth of CPUs on 8 + 8): empty.
  EXPECT_TRUE(policy::synergy::solve_opt_stage2({4, 4}, {{4, 10}, {4, 10}}, srv,
                                                {{true, true}, {true, true}})
                  .empty());
}

TEST(Synergy, OptBoundsTuneOnAServer) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // The one-server case above (4 GPUs, 12 CPUs, 250 GB): TUNE places alexnet
  // at its best case (12 CPUs, 2.94x), then res18 finds no CPUs and shrinks
  // it back to proportional (3 CPUs), so all four run at 1.0: 4.0. OPT's
  // stage 1 maximises the summed multipliers within the same 12 CPUs and
  // finds more (the earlier form of this test: above 4.5), never less.
  const Cluster c = servers(1, 4, 12, 250);
  const Workload w = jobs_of({{"alexnet", 1}, {"res18", 1}, {"gnmt", 1}, {"gnmt", 1}});
  auto summed = [&](const std::string& policy) {
    auto p = plan_once(c, w, policy);
    EXPECT_EQ(p->plan.run.size(), 4u) << policy;
    double sum = 0, cpus = 0;
    for (const Assignment& a : p->plan.run) {
      sum += a.rate_multiplier;
      cpus += a.resources[0].cpus;
    }
    EXPECT_LE(cpus, 12 + 1e-9) << policy;
    return sum;
  };
  const double tune = summed("synergy-tune:mode=compat");
  const double opt = summed("synergy-opt:mode=compat");
  EXPECT_NEAR(tune, 4.0, 1e-9);
  EXPECT_GT(opt, tune + 0.5);
}

// ----------------------------------------- compat: the static trace by hand

TEST(Synergy, CompatFirstRoundsOfTheStaticTrace) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // static-100-jobs.csv on static_trace.ini (4 servers x 8 GPUs, 24 CPUs,
  // 500 GB), synergy-tune:mode=compat (FIFO, first fit). Round 1 (t = 0)
  // sees job 0 only (the others arrive at 0.001 s and later): alexnet at its
  // best case, 12 CPUs / 125 GB on server 0. Round 2 (t = 300) walks jobs
  // 0..31 in FIFO order; the hand check (first fit per GPU, then TUNE's
  // fall-backs) is in the table below: per job its server, CPUs, memory and
  // speedup. E.g. job 3 (res18, 9 CPUs) no longer fits server 0 (8 left)
  // and goes to server 1; job 16 (shufflenet) finds no server with 12 CPUs
  // and runs proportional on server 3; job 20 (res50) finds none with 3 and
  // shrinks job 14 (mobilenet, 6 CPUs, the largest on server 3, the server
  // with the fewest free GPUs); job 21 shrinks job 3 on server 1, job 23
  // job 10, job 26 job 7 and job 29 job 9 (server 2).
  ScenarioOptions o;
  o.cluster_path = kDir + "static_trace.ini";
  o.profiles_path = kDir + "profiles.json";
  o.trace_path = kDir + "static-100-jobs.csv";
  Scenario sc = load_scenario(o);
  SchedulerState s = make_scheduler_state(sc.model, sc.workload);
  auto policy = make_round_policy("synergy-tune:mode=compat", {});
  SimulatedExecutor exec(nullptr);
  s.now = 0.0;
  admit_job(s, 0);
  RoundPlan r1 = policy->plan(s);
  ASSERT_EQ(r1.run.size(), 1u);
  EXPECT_EQ(r1.run[0].devices[0].node, 0u);
  EXPECT_NEAR(r1.run[0].resources[0].cpus, 12, 1e-9);
  EXPECT_NEAR(r1.run[0].resources[0].memory_gb, 125, 1e-9);
  EXPECT_NEAR(r1.run[0].rate_multiplier, 2.94, 1e-12);
  exec.apply(r1, s);
  exec.advance(s, 300.0);
  for (std::size_t i = 1; i < s.jobs.size(); ++i) admit_job(s, i);
  RoundPlan r2 = policy->plan(s);
  validate_plan(r2, s);
  struct Want {
    std::uint32_t node;
    double cpus, memory, speedup;
  };
  const std::vector<Want> want = {
      {0, 12, 125, 2.94}, {0, 1, 20, 1},      {0, 3, 62.5, 1},    {1, 3, 62.5, 1},
      {0, 4, 62.5, 1.15}, {0, 1, 20, 1},      {1, 6, 62.5, 1.55}, {2, 3, 62.5, 1},
      {0, 1, 20, 1},      {2, 3, 62.5, 1},    {1, 3, 62.5, 1},    {0, 1, 20, 1},
      {3, 3, 62.5, 1},    {3, 4, 62.5, 1.15}, {3, 3, 62.5, 1},    {0, 1, 20, 1},
      {3, 3, 62.5, 1},    {3, 3, 62.5, 1},    {3, 1, 20, 1},      {3, 3, 62.5, 1},
      {3, 3, 62.5, 1},    {1, 1, 20, 1},      {1, 3, 62.5, 1},    {1, 3, 62.5, 1},
      {1, 3, 62.5, 1},    {1, 1, 20, 1},      {2, 3, 62.5, 1},    {2, 3, 62.5, 1},
      {2, 1, 20, 1},      {2, 3, 62.5, 1},    {2, 6, 62.5, 1.55}, {2, 1, 20, 1}};
  ASSERT_EQ(r2.run.size(), 32u);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const Assignment* a = assignment_of(r2, i);
    ASSERT_NE(a, nullptr) << "job " << i;
    ASSERT_EQ(a->resources.size(), 1u);
    EXPECT_EQ(a->resources[0].node, want[i].node) << "job " << i;
    EXPECT_NEAR(a->resources[0].cpus, want[i].cpus, 1e-9) << "job " << i;
    EXPECT_NEAR(a->resources[0].memory_gb, want[i].memory, 1e-9) << "job " << i;
    EXPECT_NEAR(a->rate_multiplier, want[i].speedup, 1e-12) << "job " << i;
  }
  // Job 0 keeps its GPU and its 12 CPUs: a renewal.
  EXPECT_EQ(assignment_of(r2, 0)->devices[0].gpu, 0u);
}

TEST(Synergy, JctP999) {
  // 1000 finished jobs with JCTs 1..1000 s: p99 = 990, p99.9 = 999 (nearest rank).
  SimResult r;
  r.gpu_types = {"v100"};
  r.capacity = {1};
  r.tenants = {{"t", 1.0}};
  for (int i = 1; i <= 1000; ++i) {
    JobRecord j;
    j.id = std::to_string(i);
    j.tenant = "t";
    j.job_type = "x";
    j.arrival = 0;
    j.first_start = 0;
    j.finish = i;
    j.work = j.done = 1;
    r.jobs.push_back(j);
  }
  r.end = 1000;
  const SimSummary s = summarise(r, {});
  EXPECT_EQ(s.p99_jct_s, 990);
  EXPECT_EQ(s.p999_jct_s, 999);
}

TEST(Synergy, CommandLine) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // The real binary: Synergy's files by detection; a bad .ini -> one line on
  // stderr naming file, line and field, exit 2, nothing written.
  const std::filesystem::path dir = ::testing::TempDir() + "synergy_cli";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto r = run_binary({"simulate", "--quiet", "--cluster", kDir + "static_trace.ini", "--profiles",
                       kDir + "profiles.json", "--trace", kDir + "static-100-jobs.csv", "--policy",
                       "synergy-tune:base=las", "--out", (dir / "ok").string()},
                      dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "ok" / "resources.csv"));
  EXPECT_TRUE(std::filesystem::exists(dir / "ok" / "job_speedups.csv"));
  const std::string bad = write_temp("bad-cli.ini", "[CLUSTER]\nracks = 1\nservers_per_rack = x\n");
  r = run_binary(
      {"simulate", "--quiet", "--cluster", bad, "--profiles", kDir + "profiles.json", "--trace",
       kDir + "static-100-jobs.csv", "--policy", "synergy-tune", "--out", (dir / "bad").string()},
      dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "fairgpu: " + bad + ":3: servers_per_rack: must be a finite number > 0, got 'x'\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "bad"));
}

// ----------------------------------------------------------- determinism

TEST(Synergy, Deterministic) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  ScenarioOptions o;
  o.cluster_path = kDir + "static_trace.ini";
  o.profiles_path = kDir + "profiles.json";
  o.trace_path = kDir + "dynamic-100-jobs.csv";
  Scenario sc = load_scenario(o);
  Workload small = sc.workload;  // OPT solves MILPs every round: 12 jobs keep it quick
  small.jobs.resize(12);
  for (const char* p :
       {"synergy-tune:base=las", "synergy-greedy:base=ftf", "synergy-opt:base=srtf"}) {
    const Workload& w = std::string(p).find("opt") != std::string::npos ? small : sc.workload;
    auto a = make_round_policy(p, {});
    auto b = make_round_policy(p, {});
    const SimResult x = simulate(sc.model, w, *a);
    const SimResult y = simulate(sc.model, w, *b);
    ASSERT_EQ(x.jobs.size(), y.jobs.size());
    for (std::size_t i = 0; i < x.jobs.size(); ++i) {
      EXPECT_EQ(x.jobs[i].finish, y.jobs[i].finish) << p << " job " << i;
      EXPECT_EQ(x.jobs[i].restarts, y.jobs[i].restarts);
    }
  }
}

}  // namespace
}  // namespace fairgpu
