// Synergy's inputs (OSDI'22; specs/synergy.md §1, §4, §5): its CPU/memory
// sensitivity profiles, its traces, its cluster .ini files and its workload
// generator. Every reader throws InputError naming the file, line and field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fairgpu/cluster.h"
#include "fairgpu/profile.h"
#include "fairgpu/workload.h"

namespace fairgpu {

// The GPU type Synergy's homogeneous clusters and profiles are given on (its
// testbed's V100s): .ini clusters have it, and profiles.json's tables apply to
// it unless the file gives per-type entries.
inline constexpr const char* kSynergyGpuType = "v100";

// True when the JSON text looks like Synergy's profiles.json (it has a
// "by_cpus_per_gpu" object), not Gavel's throughputs.
bool is_synergy_profiles(std::string_view json_text);

// profiles.json: every model of by_cpus_per_gpu."3" becomes a job type whose
// rate is 1 / iter_time_s for any worker count (Synergy's simulator does not
// scale iteration time with GPUs), no cross-node slowdown (placement_penalty
// 1), with its 9x5 sensitivity table, best-case demand and speedup, on
// kSynergyGpuType. fairgpu's extension for heterogeneous clusters: an
// optional "by_gpu_type": {"<type>": {"<model>": {...same fields...}}} gives
// a model's rate and table on other types. Errors: a model without a table,
// a grid that is not increasing, non-positive or non-finite figures.
ProfileCatalogue parse_synergy_profiles(std::string_view json_text, const std::string& source);

// Synergy's trace: no header; job_id, model, arrival_s, iterations, gpus.
// Jobs are their own tenants ("job-<id>") unless options.tenants spreads them.
Workload read_synergy_trace(const std::string& path, const TraceOptions& options);

// Synergy's cluster .ini: [CLUSTER] racks, servers_per_rack, gpus_per_server,
// cpus_per_server, dram_per_server (GB), sspeed_per_server (storage speed,
// read and not modelled). Nodes "r<rack>-s<server>" of kSynergyGpuType. A
// [SCHEDULER] section (policy, lease_time) is skipped with a note: fairgpu
// takes them from --policy.
Cluster parse_synergy_cluster_ini(std::string_view text, const std::string& source);
Cluster read_synergy_cluster_ini(const std::string& path);

// `--gen-style synergy` (specs/synergy.md §4): Poisson arrivals at
// options.arrivals_per_hour; each job's class drawn by `class_split`
// (image:language:speech percentages) and its model uniformly in the class;
// duration 60 * 10^U(1.5, 3) s with probability 0.8, else 60 * 10^U(3, 4) s;
// one GPU. Jobs are their own tenants unless options.tenants > 1 spreads
// them. Needs profiles with Synergy's models.
struct SynergyClassSplit {
  double image = 20.0, language = 70.0, speech = 10.0;  // the artifact's benchmark split
};
// "20:70:10"; InputError("options", "gen-split", ...) otherwise.
SynergyClassSplit parse_synergy_class_split(std::string_view text);
Workload generate_synergy_workload(const GeneratorOptions& options, const SynergyClassSplit& split,
                                   const ProfileCatalogue& catalogue);

}  // namespace fairgpu
