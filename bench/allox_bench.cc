// One `allox` scheduling point (src/policy/allox.cc): the min-cost matching of
// 500 waiting single-GPU jobs to the queue positions of 1,500 GPUs (3 types x
// 500), solved by LEMON's NetworkSimplex, plus the round around it.
//
//   cmake -B build-bench -DFAIRGPU_BUILD_BENCH=ON && ninja -C build-bench fairgpu_bench
//   build-bench/fairgpu_bench --benchmark_filter=Allox
//
// "busy": 1,499 GPUs run jobs with distinct remaining times (every slot its
// own group, the hardest case) and one is free. "free": all 1,500 GPUs free
// (one group per type). Jobs draw one of 8 models with random speeds per
// type, tenants round-robin over 20; α = 1.
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "fairgpu/scheduler.h"
#include "fairgpu/simulator.h"

namespace fairgpu {
namespace {

struct Scenario {
  ClusterModel model;
  SchedulerState state;
  std::unique_ptr<RoundPolicy> policy;
};

void build(Scenario* sc, int running, int waiting) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> speed(1.0, 4.0), work(600.0, 60000.0);
  ProfileCatalogue profiles;
  profiles.source = "bench";
  const std::vector<std::string> types = {"k80", "p100", "v100"};
  for (int m = 0; m < 8; ++m) {
    JobTypeProfile t;
    t.name = "m" + std::to_string(m);
    double base = 1.0;
    for (const auto& ty : types) t.consolidated[ty][1] = base *= speed(rng);
    profiles.job_types.push_back(t);
  }
  Cluster cluster;
  cluster.gpu_types = types;
  for (std::size_t ty = 0; ty < types.size(); ++ty)
    for (int n = 0; n < 125; ++n)
      cluster.nodes.push_back({types[ty] + "-" + std::to_string(n), ty, 4, 32.0, 256.0});
  Workload w;
  for (int l = 0; l < 20; ++l) w.tenants.push_back({"t" + std::to_string(l), 1.0});
  std::uniform_int_distribution<int> model(0, 7);
  for (int i = 0; i < running + waiting; ++i) {
    JobSpec j;
    j.id = "j" + std::to_string(i);
    j.tenant = "t" + std::to_string(i % 20);
    j.job_type = "m" + std::to_string(model(rng));
    j.iterations = work(rng);
    w.jobs.push_back(j);
  }
  sc->model = bind_model(cluster, profiles, w, 10.0);
  sc->state = make_scheduler_state(sc->model, w);
  for (std::size_t i = 0; i < sc->state.jobs.size(); ++i) admit_job(sc->state, i);
  // Start the first `running` jobs, one per GPU in device order.
  RoundPlan start;
  std::size_t job = 0;
  for (std::uint32_t n = 0; n < sc->model.cluster.nodes.size(); ++n)
    for (std::uint32_t g = 0; g < 4 && job < std::size_t(running); ++g, ++job)
      start.run.push_back({job, {{n, g}}, 1e9});
  SimulatedExecutor executor(nullptr);
  executor.apply(start, sc->state);
  RoundPolicyOptions o;
  sc->policy = make_round_policy("allox", o);
}

void BM_AlloxMatching(benchmark::State& state, int running) {
  Scenario sc;
  build(&sc, running, 500);
  std::size_t started = 0;
  for (auto _ : state) {
    RoundPlan p = sc.policy->plan(sc.state);
    started = p.run.size();
    benchmark::DoNotOptimize(p);
  }
  state.counters["jobs"] = 500;
  state.counters["gpus"] = sc.model.total_gpus;
  state.counters["started"] = static_cast<double>(started);
}
BENCHMARK_CAPTURE(BM_AlloxMatching, busy, 1499)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AlloxMatching, free, 0)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fairgpu
