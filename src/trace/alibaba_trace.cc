// Readers of Alibaba's 2023 heterogeneous GPU cluster trace (alibaba-gpu-v2023,
// the "openb" trace of Weng et al., "Beware of Fragmentation", USENIX ATC
// 2023; columns as in its README): node lists -> Cluster, pod lists ->
// Workload (fairgpu/workload.h).
//
// Pods -> jobs: arrival = creation_time, duration_s = deletion_time -
// scheduled_time (the pod's observed run time; fairgpu uses it as the isolated
// run time on the slowest type, the trace records no GPU type per pod),
// workers = num_gpu, cpus = cpu_milli / 1000 and memory_gb = memory_mib /
// 1024 (the pod's requests, as the node list's capacities are read; unset,
// i.e. GPU-proportional, when the column is absent or the cell empty). Rows
// that are not runnable jobs are skipped as whole classes and counted in
// Workload::notes:
// - num_gpu = 0: CPU-only pods, not GPU jobs;
// - no scheduled_time: the pod never started (all such pods are Pending), so
//   it has no run time to replay;
// - deletion_time = scheduled_time: the pod ran for 0 s and carries no work.
// A pod deleted before it was scheduled, or scheduled before it was created,
// contradicts itself and is an InputError. Fractional-GPU pods (num_gpu = 1,
// gpu_milli < 1000) are whole-GPU jobs: fairgpu does not share a GPU between
// jobs (counted in the notes, as are pods whose gpu_spec constraint is
// ignored). The trace has no job types: each job's type is drawn uniformly
// (seeded std::mt19937_64) from options.job_types; and no tenants: each pod
// is its own tenant (named after the pod) unless options.tenants spreads the
// jobs round-robin in file order over "t0".."t<N-1>".
//
// Censored run times: a pod whose pod_phase is Running was still running when
// the trace was cut, so deletion_time - scheduled_time is only a lower bound
// of its run time. In the default pod list they are 4,149 of 6,203 GPU pods
// holding 91% of the GPU-time. options.censored says what to do with them
// (keep as recorded, drop, or cap); the count and their share of the
// GPU-time go in the notes whatever the choice.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>

#include "fairgpu/input_error.h"
#include "fairgpu/workload.h"
#include "text_input.h"

namespace fairgpu {

namespace {

constexpr std::int64_t kMaxGpus = 4096;

std::string known_models(const std::map<std::string, std::string>& gpu_map) {
  std::vector<std::string> names;
  for (const auto& [model, type] : gpu_map) names.push_back(model + "=" + type);
  return text_input::join(names);
}

}  // namespace

// Alibaba's GPU models onto the built-in catalogue's types (k80 < p100 <
// v100). The trace names models, not speeds; FP32 peak throughput from the
// vendors' data sheets decides the nearest type:
// - P100 -> p100; V100M16, V100M32 (V100 with 16/32 GB) -> v100.
// - T4 -> p100: 8.1 TFLOPS FP32 against the P100's 9.3 (PCIe); both are a
//   step below the V100's 14-15.7.
// - A10 -> v100: 31.2 TFLOPS FP32, faster than any type of the catalogue, so
//   the fastest one.
// - G1, G2, G3: undisclosed internal models (README). Assumed v100-class, as
//   they sit in 8-GPU training servers like the V100M32 nodes; an assumption,
//   override it (e.g. G2=p100) when the real model is known.
CensoredDurations parse_censored(const std::string& text) {
  CensoredDurations c;
  if (text == "keep") return c;
  if (text == "drop") {
    c.mode = CensoredDurations::Mode::kDrop;
    return c;
  }
  if (text.rfind("cap=", 0) == 0) {
    const std::string hours = text.substr(4);
    double h = 0.0;
    std::size_t used = 0;
    try {
      h = std::stod(hours, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != hours.size() || !(h > 0) || !std::isfinite(h))
      throw InputError("options", "censored",
                       fmt::format("'{}': cap=H needs H, hours, a finite number > 0", text));
    c.mode = CensoredDurations::Mode::kCap;
    c.cap_s = h * 3600.0;
    return c;
  }
  throw InputError("options", "censored", fmt::format("'{}' is not keep, drop or cap=H", text));
}

std::string censored_text(const CensoredDurations& c) {
  switch (c.mode) {
    case CensoredDurations::Mode::kDrop:
      return "drop";
    case CensoredDurations::Mode::kCap:
      return fmt::format("cap={:g}", c.cap_s / 3600.0);
    case CensoredDurations::Mode::kKeep:
      break;
  }
  return "keep";
}

std::map<std::string, std::string> default_alibaba_gpu_map() {
  return {{"P100", "p100"}, {"T4", "p100"}, {"V100M16", "v100"}, {"V100M32", "v100"},
          {"A10", "v100"},  {"G1", "v100"}, {"G2", "v100"},      {"G3", "v100"}};
}

Cluster read_alibaba_cluster(const std::string& node_csv,
                             const std::map<std::string, std::string>& gpu_map) {
  const std::vector<std::string> columns = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
  text_input::HeaderTable t(node_csv, ',', columns, columns);
  Cluster c;
  std::set<std::string> names;
  std::map<std::string, int> nodes_per_model;
  std::size_t cpu_only = 0;
  std::int64_t total = 0;
  while (t.next()) {
    std::string sn = t.name("sn");
    if (!names.insert(sn).second) t.fail("sn", "duplicate node name '" + sn + "'");
    double cpus = t.non_negative("cpu_milli") / 1000.0;
    double memory_gb = t.non_negative("memory_mib") / 1024.0;
    int gpus = static_cast<int>(t.whole("gpu", 0, kMaxGpus));
    std::string model(t.cell("model"));
    if (gpus == 0) {
      ++cpu_only;
      continue;
    }
    if (model.empty()) t.fail("model", "missing: a node with GPUs needs its GPU model");
    auto it = gpu_map.find(model);
    if (it == gpu_map.end())
      t.fail("model", fmt::format("GPU model '{}' has no GPU type; map it to one, e.g. {}=v100 "
                                  "(mapped models: {})",
                                  model, model, known_models(gpu_map)));
    if (it->second.empty()) t.fail("model", "GPU model '" + model + "' maps to an empty type name");
    std::size_t type = 0;
    if (auto known = c.type_index(it->second)) {
      type = *known;
    } else {
      c.gpu_types.push_back(it->second);
      type = c.gpu_types.size() - 1;
    }
    total += gpus;
    if (total > INT32_MAX) t.fail("gpu", "the cluster has more GPUs than fairgpu can count");
    ++nodes_per_model[model];
    c.nodes.push_back(Node{std::move(sn), type, gpus, cpus, memory_gb});
  }
  if (c.nodes.empty())
    throw InputError(node_csv, "gpu", fmt::format("no GPU nodes ({} CPU-only nodes)", cpu_only));
  std::vector<std::string> mapped;
  for (const auto& [model, n] : nodes_per_model)
    mapped.push_back(fmt::format("{} -> {} ({} nodes)", model, gpu_map.at(model), n));
  c.notes.push_back(node_csv + ": GPU models mapped to types: " + text_input::join(mapped));
  if (cpu_only > 0)
    c.notes.push_back(fmt::format("{}: {} CPU-only nodes (gpu = 0) skipped", node_csv, cpu_only));
  return c;
}

Workload read_alibaba_trace(const std::string& pod_csv, const TraceOptions& options) {
  if (options.tenants < 0)
    throw InputError("options", "tenants", "must be >= 0, got " + std::to_string(options.tenants));
  if (options.job_types.empty())
    throw InputError("options", "job_types",
                     "no job types to draw the pods' types from (the trace has none)");
  text_input::HeaderTable t(
      pod_csv, ',',
      {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
       "creation_time", "deletion_time", "scheduled_time"},
      {"name", "num_gpu"});
  for (const char* col : {"creation_time", "scheduled_time", "deletion_time"})
    if (!t.has(col))
      t.fail(col,
             "missing column: arrivals and run times come from creation_time, "
             "scheduled_time and deletion_time, so this pod list cannot be replayed (the "
             "header has: " +
                 text_input::join(t.columns()) + ")");

  std::mt19937_64 rng(options.seed);
  const auto n_types = options.job_types.size();
  std::vector<JobSpec> jobs;
  std::set<std::string> names;
  std::size_t cpu_only = 0, zero_run = 0, fractional = 0, constrained = 0;
  std::size_t censored = 0;
  double gpu_seconds = 0.0, censored_gpu_seconds = 0.0;  // as recorded
  std::map<std::string, std::size_t> unscheduled;  // by pod_phase
  while (t.next()) {
    std::string name = t.name("name");
    if (!names.insert(name).second) t.fail("name", "duplicate pod name '" + name + "'");
    int gpus = static_cast<int>(t.whole("num_gpu", 0, kMaxGpus));
    if (gpus == 0) {
      ++cpu_only;
      continue;
    }
    double created = t.non_negative("creation_time");
    if (t.cell("scheduled_time").empty()) {
      ++unscheduled[t.has("pod_phase") ? std::string(t.cell("pod_phase")) : std::string()];
      continue;
    }
    double scheduled = t.non_negative("scheduled_time");
    double deleted = t.non_negative("deletion_time");
    if (scheduled < created)
      t.fail("scheduled_time", fmt::format("{} is before creation_time {}", scheduled, created));
    if (deleted < scheduled)
      t.fail("deletion_time", fmt::format("{} is before scheduled_time {}", deleted, scheduled));
    if (deleted == scheduled) {
      ++zero_run;
      continue;
    }
    double run_s = deleted - scheduled;
    gpu_seconds += gpus * run_s;
    if (t.has("pod_phase") && t.cell("pod_phase") == "Running") {
      ++censored;
      censored_gpu_seconds += gpus * run_s;
      if (options.censored.mode == CensoredDurations::Mode::kDrop) continue;
      if (options.censored.mode == CensoredDurations::Mode::kCap)
        run_s = std::min(run_s, options.censored.cap_s);
    }
    if (t.has("gpu_milli")) {
      auto milli = t.whole("gpu_milli", 1, 1000);
      if (gpus == 1 && milli < 1000) ++fractional;
    }
    if (!t.cell("gpu_spec").empty()) ++constrained;
    JobSpec job;
    job.id = name;
    job.workers = gpus;
    job.arrival_s = created;
    job.duration_s = run_s;
    if (!t.cell("cpu_milli").empty()) job.cpus = t.non_negative("cpu_milli") / 1000.0;
    if (!t.cell("memory_mib").empty()) job.memory_gb = t.non_negative("memory_mib") / 1024.0;
    auto pick =
        static_cast<std::size_t>(text_input::unit_uniform(rng()) * static_cast<double>(n_types));
    job.job_type = options.job_types[std::min(pick, n_types - 1)];
    job.tenant = options.tenants > 0 ? "t" + std::to_string(jobs.size() % options.tenants) : name;
    jobs.push_back(std::move(job));
  }

  std::size_t never = 0;
  std::vector<std::string> phases;
  for (const auto& [phase, n] : unscheduled) {
    never += n;
    phases.push_back(fmt::format("{} {}", n, phase.empty() ? "(no phase)" : phase));
  }
  if (jobs.empty())
    throw InputError(pod_csv, "num_gpu",
                     fmt::format("no GPU job to replay ({} CPU-only pods, {} never scheduled, "
                                 "{} ran 0 s, {} censored and dropped)",
                                 cpu_only, never, zero_run,
                                 options.censored.mode == CensoredDurations::Mode::kDrop
                                     ? censored
                                     : 0));
  Workload w = text_input::make_workload(std::move(jobs));
  const std::string& f = pod_csv;
  std::string tenants = options.tenants > 0
                            ? fmt::format("tenants t0..t{} round-robin", options.tenants - 1)
                            : std::string("each pod its own tenant");
  w.notes.push_back(fmt::format(
      "{}: {} GPU pods read as jobs; job types drawn with seed {} from {} job type(s); {}", f,
      w.jobs.size(), options.seed, n_types, tenants));
  if (cpu_only > 0)
    w.notes.push_back(
        fmt::format("{}: {} CPU-only pods (num_gpu = 0) skipped: not GPU jobs", f, cpu_only));
  if (never > 0)
    w.notes.push_back(
        fmt::format("{}: {} GPU pods skipped: never scheduled (no scheduled_time; "
                    "pod_phase: {}), so no run time",
                    f, never, text_input::join(phases)));
  if (zero_run > 0)
    w.notes.push_back(fmt::format(
        "{}: {} GPU pods skipped: ran 0 s (deletion_time = scheduled_time)", f, zero_run));
  {
    const double share = gpu_seconds > 0 ? 100.0 * censored_gpu_seconds / gpu_seconds : 0.0;
    const std::string what =
        options.censored.mode == CensoredDurations::Mode::kDrop ? "dropped"
        : options.censored.mode == CensoredDurations::Mode::kCap
            ? fmt::format("run times capped at {:g} h", options.censored.cap_s / 3600.0)
            : "kept with their recorded run times";
    w.notes.push_back(fmt::format(
        "{}: {} GPU pods censored (pod_phase Running: still running when the trace was cut, "
        "their run time a lower bound; {:.1f}% of the recorded GPU-time): {} (--censored {})",
        f, censored, share, what, censored_text(options.censored)));
  }
  if (fractional > 0)
    w.notes.push_back(fmt::format(
        "{}: {} fractional-GPU pods (gpu_milli < 1000) run as 1 whole GPU", f, fractional));
  if (constrained > 0)
    w.notes.push_back(
        fmt::format("{}: {} pods' GPU model constraints (gpu_spec) ignored", f, constrained));
  return w;
}

}  // namespace fairgpu
