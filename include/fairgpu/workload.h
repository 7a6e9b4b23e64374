// Workloads (docs/design.md §1, §5): the jobs a trace submits, with their tenants.
// Readers: fairgpu's native CSV, Gavel's .trace, Alibaba's 2023 GPU cluster
// trace; and a seeded generator with Gavel's job-size mix. Readers never drop
// a job silently: a row they cannot use is an InputError (file:line, field),
// except whole classes of rows that are not runnable jobs (Alibaba's CPU-only
// and never-scheduled pods), which are skipped and counted in Workload::notes.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fairgpu/adaptation.h"
#include "fairgpu/cluster.h"
#include "fairgpu/profile.h"

namespace fairgpu {

inline constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();

struct JobSpec {
  std::string id;
  std::string tenant;
  std::string job_type;  // a name in the profile catalogue
  int workers = 1;       // gang size: GPUs, all or nothing
  double arrival_s = 0.0;
  // Work: exactly one is set. duration_s is the isolated run time on the
  // cluster's slowest GPU type (all workers on one node when a node is big
  // enough); the simulator turns it into iterations with the bound profile.
  double iterations = kUnset;
  double duration_s = kUnset;
  double weight = 1.0;  // job priority weight (Gavel's priority_weight)
  // CPU cores and memory (GB) the whole job needs, all workers together;
  // kUnset: not given, make_scheduler_state resolves it GPU-proportionally
  // (workers x the cluster's CPUs (memory) per GPU). Read by CPU/memory-aware
  // policies (drf); the others ignore them.
  double cpus = kUnset;
  double memory_gb = kUnset;
  // Dynamic adaptation (fairgpu/adaptation.h). Empty `regimes`: a static job
  // whose work is iterations (or duration_s). Otherwise the job's work is the
  // sum of the regimes' epochs (iterations and duration_s are informative),
  // job_type is the first regime's profile entry and each regime runs at
  // "<model> (batch size b)"; samples_per_epoch turns iterations/s into
  // epochs/s.
  AdaptationMode mode = AdaptationMode::kStatic;
  std::string model = {};
  double samples_per_epoch = kUnset;
  std::vector<BatchRegime> regimes = {};
};

struct TenantSpec {
  std::string name;
  double weight = 1.0;
};

struct Workload {
  std::vector<TenantSpec> tenants;  // every tenant a job names, in order of first appearance
  std::vector<JobSpec> jobs;        // sorted by arrival (stable)
  // What a reader decided about rows that are not jobs or lost information
  // (e.g. "1088 CPU-only pods (num_gpu = 0) skipped: not GPU jobs"), one
  // sentence each, for the CLI to print on stderr. A class of rows is skipped
  // only if it is counted here. (= {} keeps two-member aggregate
  // initialisation free of -Wmissing-field-initializers.)
  std::vector<std::string> notes = {};
};

// What a reader does with a censored run time: a job still running when the
// trace was cut (Alibaba's pod_phase = Running), whose recorded run time is
// only a lower bound of its real one. keep: run it for the recorded time (the
// default); drop: leave the job out; cap: run it for min(recorded, cap_s).
struct CensoredDurations {
  enum class Mode { kKeep, kDrop, kCap };
  Mode mode = Mode::kKeep;
  double cap_s = 0.0;  // kCap only: > 0
};
// "keep" | "drop" | "cap=H" (H hours, > 0); anything else is an InputError
// naming the option.
CensoredDurations parse_censored(const std::string& text);
std::string censored_text(const CensoredDurations& c);  // back to "keep" etc.

// Options shared by readers of traces that carry no tenants or job types.
struct TraceOptions {
  int tenants = 0;          // > 0: spread tenant-less jobs round-robin over N tenants "t0".."tN-1"
  std::uint64_t seed = 1;   // for drawn job types (Alibaba)
  // Job types to draw from when the trace has none (Alibaba); default: the catalogue's.
  std::vector<std::string> job_types;
  CensoredDurations censored = {};  // Alibaba: pods still running when the trace was cut
};

// Native CSV, header required:
//   job_id,tenant,job_type,num_workers,arrival_s,iterations|duration_s[,weight][,cpus][,memory_gb]
// `weight` is the tenant's weight (rows of one tenant must agree). Errors name
// "<path>:<line>" and the column.
Workload read_native_trace(const std::string& path);
std::string write_native_trace(const Workload& workload);  // the same format, round-trips
// The same table as JSON: {"columns": [...], "jobs": [{column: value}, ...]},
// a number where the CSV has one, null for an empty cell.
std::string write_native_trace_json(const Workload& workload);

// Gavel's .trace: 10 tab-separated columns (job_type, command, working_directory,
// num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight,
// SLO, arrival_time). Jobs are their own tenants ("job-<i>") unless
// options.tenants spreads them.
Workload read_gavel_trace(const std::string& path, const TraceOptions& options);

// Shockwave's .trace (specs/shockwave.md §1.1): Gavel's columns plus `mode`
// (static | accordion | gns) after scale_factor and `duration` (isolated
// seconds at the initial batch size) before arrival_time, 12 in all. Each job
// gets its per-epoch batch-size schedule from its mode, model and initial
// batch size (adaptation.h). An unknown mode or model, or a job type without
// a batch size, is an InputError naming the line and column.
Workload read_shockwave_trace(const std::string& path, const TraceOptions& options);

// Gives `job` (job_type "<model> (batch size b)", iterations set) its
// batch-size schedule under `mode`: model, samples_per_epoch, regimes.
// Returns "" or what is wrong (no batch size in the job type, a model without
// a known dataset, too few iterations for one epoch).
std::string set_adaptation(JobSpec& job, AdaptationMode mode);

// Alibaba's 2023 heterogeneous GPU cluster trace (alibaba-gpu-v2023).
// GPU model -> GPU type map, default documented in src/trace/alibaba_trace.cc,
// overridable entry by entry ("G2=v100").
std::map<std::string, std::string> default_alibaba_gpu_map();
// Node list -> cluster (GPU nodes only; CPU-only nodes are counted and skipped).
Cluster read_alibaba_cluster(const std::string& node_csv,
                             const std::map<std::string, std::string>& gpu_map);
// Pods with num_gpu > 0 -> jobs: arrival = creation_time, duration_s =
// deletion_time - scheduled_time, fractional-GPU pods as 1 GPU, cpus =
// cpu_milli / 1000 and memory_gb = memory_mib / 1024 (unset when the column
// is absent), job type drawn (seeded) from options.job_types.
Workload read_alibaba_trace(const std::string& pod_csv, const TraceOptions& options);

// `fairgpu generate`: Poisson arrivals and one of two job-size mixes (style):
//   "gavel": Gavel's job-size mix, tenants uniform (the default);
//   "venus": SenseTime's Venus trace as characterised by Astraea (TPDS'22 §3.1,
//            Table 1): long-tailed run times, 1/2/4/8/16-GPU gangs, larger gangs
//            running longer, tenants alternating between busy and quiet periods.
// Both draw job types the same way. Details in src/trace/generator.cc.
struct GeneratorOptions {
  int jobs = 300;
  int tenants = 20;
  double arrivals_per_hour = 60.0;     // Poisson rate λ
  double main_type_fraction = 0.9;     // probability a tenant's job uses its own job type
  std::uint64_t seed = 1;
  std::vector<std::string> job_types;  // pool; default: the catalogue's
  std::string style = "gavel";         // "gavel" | "venus"
  // Empirical run times (seconds, > 0) to draw each job's duration from,
  // uniformly, instead of the style's distribution (e.g. Philly's, OEF §6.1.2).
  std::vector<double> run_times;
};
// A one-column CSV of run times in seconds under a header line (e.g.
// ../shared/data/philly_runtime.csv). Entries of 0 s (jobs that ended within
// the trace's resolution) cannot be simulated: they are left out and counted
// in *zeros. Errors name "<path>:<line>": not a number, negative, NaN or
// infinite, or no positive entry at all.
std::vector<double> read_run_times(const std::string& path, std::size_t* zeros);
Workload generate_workload(const GeneratorOptions& options, const ProfileCatalogue& catalogue);

}  // namespace fairgpu
