// A simulation scenario: the cluster, the profiles and the workload a run
// uses, loaded from files or built-in defaults, bound and checked. Shared by
// `fairgpu simulate`, `fairgpu compare`, the tests and the benchmarks.
#pragma once

#include <string>
#include <vector>

#include "fairgpu/scheduler.h"
#include "fairgpu/workload.h"

namespace fairgpu {

// The built-in workload of `fairgpu simulate` with no arguments (and the
// defaults of `fairgpu generate`): 300 jobs from 20 tenants, 60 Poisson
// arrivals per hour, Gavel's job-size mix.
GeneratorOptions default_generator_options();

struct ScenarioOptions {
  std::string cluster_path;     // cluster JSON; "" = built-in (or the Alibaba node list)
  std::string cluster_spec;     // Gavel-style "k80:36,p100:36:4" (parse_cluster_spec), instead
  std::string alibaba_nodes;    // Alibaba node CSV: the cluster comes from it
  bool gangs_on_one_node = false;    // Cluster::gangs_on_one_node
  bool gangs_spread_evenly = false;  // Cluster::gangs_spread_evenly (as serve on Slurm plans)
  std::vector<std::string> gpu_map;  // "MODEL=type" overrides of the Alibaba map
  std::string profiles_path;    // Gavel simulation_throughputs.json; "" = built-in
  std::string trace_path;       // "" = the built-in generated workload
  std::string trace_format;     // "" = by content/extension: native | gavel | alibaba
  int tenants = 0;              // spread tenant-less traces over N tenants
  std::uint64_t seed = 1;       // drawn job types (Alibaba) and the generated workload
  GeneratorOptions generator = default_generator_options();  // the built-in workload (used when trace_path is ""); its
                                // style (gavel | venus) is --gen-style
  double restart_overhead_s = 10.0;
  // Arrival times scaled around the first arrival (durations untouched): by
  // time_scale (< 1 compresses the trace, raising its load), or, when load
  // > 0, by the factor that makes window_load() equal `load`. Not both.
  double time_scale = 1.0;
  double load = 0.0;
  // Alibaba pods still running when the trace was cut: "keep" | "drop" |
  // "cap=H" (parse_censored).
  std::string censored = "keep";
  // "" or "poisson:R": a trace's arrivals replaced, in its order, by a
  // Poisson process of R jobs per hour from its first arrival (seeded by
  // `seed`), e.g. to give a batch trace (all arrivals 0) arrivals; applied
  // before --load / --time-scale.
  std::string arrivals;
  std::string synergy_split = "20:70:10";  // --gen-style synergy: image:language:speech
};

// A workload's offered loads (offered_load(), window_load()) and its arrival
// window, seconds.
struct LoadFigures {
  double offered = kUnset;
  double window = kUnset;
  double span_s = 0.0;
};

struct Scenario {
  ClusterModel model;
  Workload workload;
  LoadFigures load;                // of the workload as it runs (after --load etc.)
  std::string description;         // one line: what was loaded
  std::vector<std::string> notes;  // what readers skipped and why (printed on stderr)
};


// Throws InputError on any bad file or option.
Scenario load_scenario(const ScenarioOptions& options);

// Offered load of a workload on a model: the GPU-seconds its jobs need alone
// on the cluster's capacity-weighted average GPU (workers x
// JobRecord::exclusive_s), per GPU-second of the cluster over the span of
// arrivals (first to last): all the work, wherever it is done. NaN with
// fewer than two distinct arrival times.
double offered_load(const ClusterModel& model, const Workload& workload);

// Offered load over the window the work is done in, the arrival window (first
// to last arrival): the GPU-seconds done inside it if every job ran alone on
// the average GPU from its arrival, workers x min(exclusive_s, last arrival -
// arrival), per GPU-second of the window. What a work-conserving policy's
// time-averaged utilisation over the window is while it is below 1. Equal to
// offered_load() when every job would end inside the window; less when work
// spills past it (long or censored run times). NaN as offered_load(). This is
// what --load sets.
double window_load(const ClusterModel& model, const Workload& workload);

// The exclusive GPU-seconds per job (workers x exclusive_s) and the loads
// above from them, computed once (make_scheduler_state is not free on
// 1,000,000 jobs).
LoadFigures load_figures(const ClusterModel& model, const Workload& workload);

}  // namespace fairgpu
