// Share-policy solve times against the plain full LPs solved by CLP (with
// presolve) in the same run: report the ratio fast/full per instance size.
//
//   cmake -B build-bench -DFAIRGPU_BUILD_BENCH=ON && ninja -C build-bench fairgpu_bench
//   build-bench/fairgpu_bench --benchmark_filter=NonCoop
//
// Instances: "uniform" draws speedups uniformly (tests/test_instances.h);
// "gavel" gives every tenant one of the 26 models of Gavel's measured
// throughputs (../shared/data/gavel/simulation_throughputs.json, scale factor
// 1, normalised to K80) on k80/p100/v100, so many tenants share a vector.
#include <benchmark/benchmark.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

#include "../tests/reference_lp.h"
#include "../tests/test_instances.h"
#include "fairgpu/policy.h"

namespace fairgpu {
namespace {

ShareProblem gavel_problem(std::size_t n, std::uint32_t seed) {
  std::ifstream in(FAIRGPU_SHARED_DATA "/gavel/simulation_throughputs.json");
  if (!in) throw std::runtime_error("cannot open Gavel throughputs");
  nlohmann::json j = nlohmann::json::parse(in);
  std::vector<std::string> types = {"k80", "p100", "v100"};
  std::map<std::string, std::vector<double>> models;
  for (auto& [key, entry] : j["k80"].items()) {
    if (key.size() < 4 || key.substr(key.size() - 3) != " 1)") continue;  // scale factor 1
    std::vector<double> w;
    for (const auto& t : types) w.push_back(j[t][key]["null"].get<double>());
    double base = w[0];
    for (auto& v : w) v /= base;
    models[key] = w;
  }
  std::vector<std::vector<double>> catalogue;
  for (auto& [k, w] : models) catalogue.push_back(w);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, catalogue.size() - 1);
  ShareProblem p;
  p.gpu_types = types;
  double per_type = std::max(1.0, static_cast<double>(n) / 3.0);
  p.capacity = {per_type, per_type, per_type};
  for (std::size_t l = 0; l < n; ++l) p.add_tenant("u" + std::to_string(l), catalogue[pick(rng)]);
  return p;
}

void run_policy(benchmark::State& state, const char* name, const ShareProblem& p) {
  auto policy = make_share_policy(name);
  for (auto _ : state) benchmark::DoNotOptimize(policy->allocate(p));
  state.counters["n"] = static_cast<double>(p.num_entities());
  state.counters["k"] = static_cast<double>(p.num_types());
}

// ---- oef-noncoop: n tenants, k = 10 -----------------------------------------
void BM_NonCoopFullLp(benchmark::State& state) {
  auto p = testing::random_problem(1, static_cast<std::size_t>(state.range(0)), 10);
  for (auto _ : state) benchmark::DoNotOptimize(reference::full_noncoop_total(p));
}
void BM_NonCoopPolicy(benchmark::State& state) {
  run_policy(state, "oef-noncoop",
             testing::random_problem(1, static_cast<std::size_t>(state.range(0)), 10));
}
BENCHMARK(BM_NonCoopFullLp)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_NonCoopPolicy)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// ---- oef-coop: uniform, k = 10 ----------------------------------------------
void BM_CoopFullLp(benchmark::State& state) {
  auto p = testing::random_problem(2, static_cast<std::size_t>(state.range(0)), 10);
  for (auto _ : state) benchmark::DoNotOptimize(reference::full_coop_total(p));
}
void BM_CoopPolicy(benchmark::State& state) {
  run_policy(state, "oef-coop",
             testing::random_problem(2, static_cast<std::size_t>(state.range(0)), 10));
}
BENCHMARK(BM_CoopFullLp)->Arg(100)->Arg(200)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_CoopPolicy)
    ->Arg(100)
    ->Arg(200)
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// ---- oef-coop: Gavel's measured throughputs, k = 3 ---------------------------
void BM_CoopGavelFullLp(benchmark::State& state) {
  auto p = gavel_problem(static_cast<std::size_t>(state.range(0)), 3);
  for (auto _ : state) benchmark::DoNotOptimize(reference::full_coop_total(p));
}
void BM_CoopGavelPolicy(benchmark::State& state) {
  run_policy(state, "oef-coop", gavel_problem(static_cast<std::size_t>(state.range(0)), 3));
}
BENCHMARK(BM_CoopGavelFullLp)->Arg(100)->Arg(200)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_CoopGavelPolicy)->Arg(100)->Arg(200)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fairgpu
