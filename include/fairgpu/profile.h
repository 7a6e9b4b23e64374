// Throughput profiles (docs/design.md §1): per job type and GPU type, iterations/s of
// a job with g workers, with all workers on one node (consolidated) and, when
// measured, spread over nodes (unconsolidated). Gavel's
// simulation_throughputs.json has exactly this shape; the built-in catalogue
// carries a few job types with the sources of its figures.
#pragma once

#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fairgpu {

// Multiplier on a job's rate when its workers span nodes and the profile has
// no unconsolidated measurement for it (see JobTypeProfile).
inline constexpr double kDefaultCrossNodeFactor = 0.8;

// CPU and memory sensitivity of one GPU of a job type (Synergy, OSDI'22 §3;
// specs/synergy.md §1): its throughput over a grid of CPU cores and memory
// per GPU, as a multiplier on the profile's rate, which is the rate at the
// GPU-proportional share of the cluster the table was measured on (Synergy's:
// 3 CPUs and 62.5 GB per GPU, where the table holds 1.0).
struct SensitivityTable {
  std::vector<double> cpu_per_gpu;        // strictly increasing, > 0
  std::vector<double> memory_gb_per_gpu;  // strictly increasing, > 0
  std::vector<double> multiplier;         // cpu-major: [i * memory_gb_per_gpu.size() + k], > 0
  // Best-case demand per GPU: the smallest cell reaching the table's maximum,
  // and its speedup over the proportional share (Synergy's two-point model).
  double best_cpu_per_gpu = 0.0;
  double best_memory_gb_per_gpu = 0.0;
  double speedup = 1.0;

  // The multiplier of one GPU holding `cpus` cores and `memory_gb`: the cell
  // at the largest grid point <= each value (the first row or column below
  // the grid), so holding more than a grid point never counts as the next.
  double at(double cpus, double memory_gb) const;
};

struct JobTypeProfile {
  std::string name;  // "ResNet-50 (batch size 64)": model + batch size
  // GPU type name -> workers -> iterations/s of the whole job. Every GPU type
  // the profile knows has an entry for 1 worker.
  std::map<std::string, std::map<int, double>> consolidated;
  // Same, workers spread over nodes (Gavel's "<type>_unconsolidated"); may be
  // empty, then the rate is consolidated x cross_node_factor.
  std::map<std::string, std::map<int, double>> unconsolidated;
  double cross_node_factor = kDefaultCrossNodeFactor;
  // Progress lost when the job (re)starts; nullopt = the simulator's default.
  std::optional<double> restart_overhead_s;
  // CPU/memory sensitivity per GPU type name; the key "" applies to every
  // type without its own. Empty: the job type is insensitive (multiplier 1).
  std::map<std::string, SensitivityTable> sensitivity = {};
  const SensitivityTable* sensitivity_on(const std::string& gpu_type) const;

  // Iterations/s of a job with `workers` workers all on `gpu_type`.
  // Scaling: efficiency eff(g) = rate(g) / (g * rate(1)) is read at the known
  // worker counts and interpolated linearly in g between them; above the
  // largest known count the largest's efficiency is kept. NaN if the type is
  // unknown to this profile or workers < 1. 0 if the job cannot run at that
  // size: a measured 0 (Gavel records 0 for ResNet-50 (batch size 128) on k80
  // at 2+ workers), and sizes interpolated next to one. Spread over nodes: the
  // type's unconsolidated figures when they cover > 1 worker, else
  // consolidated x cross_node_factor (src/model/profile.cc).
  double rate(const std::string& gpu_type, int workers, bool cross_node) const;
};

struct ProfileCatalogue {
  std::string source;  // "built-in" or the file path
  std::vector<JobTypeProfile> job_types;

  const JobTypeProfile* find(std::string_view name) const;
  std::optional<std::size_t> index(std::string_view name) const;
  // GPU types every job type has a 1-worker figure for, sorted by name.
  std::vector<std::string> gpu_types() const;
};

// The built-in catalogue: job types with per-type throughputs and multi-GPU
// scaling for k80, p100 and v100 (figures cited in src/trace/builtin_profiles.cc).
const ProfileCatalogue& builtin_profiles();

// Gavel's format: {gpu_type: {"('<model>', <scale_factor>)": {"null": it/s, ...}}};
// keys "<type>_unconsolidated" fill JobTypeProfile::unconsolidated; co-location
// entries (every key but "null") are ignored. Throws InputError on anything
// malformed (negative, non-finite or zero 1-worker figures, bad keys, a job
// type without a 1-worker figure on some type).
ProfileCatalogue parse_gavel_profiles(std::string_view json_text, const std::string& source);
ProfileCatalogue read_profiles_file(const std::string& path);
// Shockwave's throughput JSON (tacc_throughputs.json): Gavel's format, where a
// job type measured 0 at every size on a GPU type (out of memory there, e.g.
// Transformer (batch size 256)) cannot run on that type: those figures are
// left out (the catalogue's source says how many), the rest is read as above.
ProfileCatalogue read_shockwave_profiles_file(const std::string& path);

}  // namespace fairgpu
