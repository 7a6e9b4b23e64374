// Binding a cluster to a throughput profile (docs/design.md §1): the slowest GPU type
// becomes type 0, the reference of every speedup, and everything a run will
// look up is checked once here so that the scheduler never meets a missing
// figure mid-run.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fairgpu/input_error.h"
#include "fairgpu/scheduler.h"

namespace fairgpu {

ClusterModel bind_model(const Cluster& cluster, const ProfileCatalogue& catalogue,
                        const Workload& workload, double restart_overhead_s) {
  const std::string source = "cluster/profiles";
  if (cluster.nodes.empty()) throw InputError(source, "nodes", "the cluster has no GPU node");
  if (!(restart_overhead_s >= 0.0) || !std::isfinite(restart_overhead_s))
    throw InputError("options", "restart-overhead", "must be a finite number >= 0");

  ClusterModel model;
  model.restart_overhead_s = restart_overhead_s;
  model.profiles.source = catalogue.source;

  // The job types the workload uses, in first-use order; all must be known on
  // every GPU type of the cluster.
  // A job with a batch-size schedule uses one type per batch size.
  std::vector<std::pair<const JobSpec*, std::string>> uses;
  for (const JobSpec& job : workload.jobs) {
    uses.emplace_back(&job, job.job_type);
    for (const BatchRegime& r : job.regimes)
      uses.emplace_back(&job, batch_job_type(job.model, r.batch_size));
  }
  for (const auto& [job_ptr, job_type] : uses) {
    const JobSpec& job = *job_ptr;
    if (model.profiles.index(job_type)) continue;
    const JobTypeProfile* p = catalogue.find(job_type);
    if (!p)
      throw InputError(
          "trace", fmt::format("job {}: job_type", job.id),
          fmt::format("'{}' is not in the profiles ({}){}{}", job_type, catalogue.source,
                      job_type == job.job_type
                          ? ""
                          : fmt::format(" (its {} schedule reaches that batch size)",
                                        to_string(job.mode)),
                      // A trace of another system's job types with the built-in figures:
                      // its own profiles file is what is missing.
                      catalogue.source == "built-in"
                          ? "; give the trace's throughput figures with --profiles FILE "
                            "(a Gavel trace: Gavel's simulation_throughputs.json)"
                          : ""));
    for (const std::string& type : cluster.gpu_types) {
      double r = p->rate(type, 1, false);
      if (!(r > 0.0))
        throw InputError("cluster/profiles", fmt::format("gpu_type {}", type),
                         fmt::format("the profiles ({}) have no throughput on '{}' for job type "
                                     "'{}'",
                                     catalogue.source, type, p->name));
    }
    model.profiles.job_types.push_back(*p);
  }
  if (model.profiles.job_types.empty()) throw InputError("trace", "jobs", "the trace has no job");
  // Batch sizes a predictor may expect a job to reach (adaptation.h's
  // next_configuration) are bound too when the profiles have them on every
  // type: optional, a prediction falls back to known regimes without them.
  for (const JobSpec& job : workload.jobs) {
    if (job.regimes.empty()) continue;
    const int bs0 = job.regimes.front().batch_size;
    int bs = bs0;
    for (int step = 0; step < 8; ++step) {
      bs = next_configuration(job.mode, job.model, bs0, bs);
      const std::string name = batch_job_type(job.model, bs);
      if (model.profiles.index(name)) continue;
      const JobTypeProfile* p = catalogue.find(name);
      bool everywhere = p != nullptr;
      for (const std::string& type : cluster.gpu_types)
        everywhere = everywhere && p->rate(type, 1, false) > 0.0;
      if (everywhere) model.profiles.job_types.push_back(*p);
    }
  }

  // Speed order: geometric mean over the used job types of the 1-worker rate
  // relative to the first type; ties keep the cluster's order.
  const std::size_t k = cluster.num_types();
  std::vector<double> score(k, 0.0);
  for (std::size_t t = 0; t < k; ++t)
    for (const JobTypeProfile& p : model.profiles.job_types)
      score[t] += std::log(p.rate(cluster.gpu_types[t], 1, false) /
                           p.rate(cluster.gpu_types[0], 1, false));
  std::vector<std::size_t> order(k);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return score[a] < score[b] - 1e-12; });
  std::vector<std::size_t> new_index(k);
  for (std::size_t i = 0; i < k; ++i) new_index[order[i]] = i;

  model.cluster.gangs_on_one_node = cluster.gangs_on_one_node;
  model.cluster.gangs_spread_evenly = cluster.gangs_spread_evenly;
  model.cluster.gpu_types.resize(k);
  for (std::size_t t = 0; t < k; ++t) model.cluster.gpu_types[new_index[t]] = cluster.gpu_types[t];
  model.capacity.assign(k, 0);
  for (const Node& n : cluster.nodes) {
    if (n.gpus <= 0) continue;  // CPU-only nodes hold no device
    Node copy = n;
    copy.type = new_index[n.type];
    model.node_first_device.push_back(static_cast<std::size_t>(model.total_gpus));
    model.capacity[copy.type] += n.gpus;
    model.total_gpus += n.gpus;
    model.cluster.nodes.push_back(std::move(copy));
  }
  if (model.total_gpus == 0) throw InputError(source, "nodes", "the cluster has no GPU");

  // Every gang must fit on the types where its profile has a positive rate
  // (a gang may span types, running at its slowest one's rate).
  model.largest_node.assign(k, 0);
  for (const Node& n : model.cluster.nodes)
    model.largest_node[n.type] = std::max(model.largest_node[n.type], n.gpus);
  // Where gangs spread evenly: each type's nodes, and whether they hold a
  // gang of a size, worked out once per (type, size), not once per job.
  std::vector<std::vector<int>> node_gpus_of_type(k);
  for (const Node& n : model.cluster.nodes) node_gpus_of_type[n.type].push_back(n.gpus);
  std::map<std::pair<std::size_t, int>, bool> holds_evenly;
  auto type_holds_evenly = [&](std::size_t t, int gang) {
    auto [it, fresh] = holds_evenly.try_emplace({t, gang}, false);
    if (fresh) it->second = holds_gang_evenly(node_gpus_of_type[t], gang);
    return it->second;
  };
  for (const JobSpec& job : workload.jobs) {
    if (job.workers > model.total_gpus)
      throw InputError("trace", fmt::format("job {}: workers", job.id),
                       fmt::format("{} workers can never run on the cluster's {} GPUs",
                                   job.workers, model.total_gpus));
    std::vector<std::string> types{job.job_type};
    for (const BatchRegime& r : job.regimes)
      types.push_back(batch_job_type(job.model, r.batch_size));
    for (const std::string& name : types) {
      const JobTypeProfile& p = *model.profiles.find(name);
      if (cluster.gangs_on_one_node) {  // one node of a type it runs on must hold it
        int largest = 0;
        for (std::size_t t = 0; t < k; ++t)
          if (p.rate(model.cluster.gpu_types[t], job.workers, false) > 0.0)
            largest = std::max(largest, model.largest_node[t]);
        if (largest < job.workers)
          throw InputError("trace", fmt::format("job {}: workers", job.id),
                           fmt::format("'{}' with {} workers: the cluster keeps a gang on one "
                                       "node, and its largest node of a type the job runs on "
                                       "has {} GPUs",
                                       name, job.workers, largest));
        continue;
      }
      if (cluster.gangs_spread_evenly) {  // one type's nodes must hold it evenly
        bool holds = false;
        for (std::size_t t = 0; t < k && !holds; ++t)
          holds = p.rate(model.cluster.gpu_types[t], job.workers,
                         job.workers > model.largest_node[t]) > 0.0 &&
                  type_holds_evenly(t, job.workers);
        if (!holds)
          throw InputError("trace", fmt::format("job {}: workers", job.id),
                           fmt::format("'{}' with {} workers: the cluster spreads a gang only "
                                       "evenly (the same number of GPUs on each node, one type), "
                                       "and no type the job runs on has nodes that hold {} so",
                                       name, job.workers, job.workers));
        continue;
      }
      int usable = 0;
      for (std::size_t t = 0; t < k; ++t)
        if (p.rate(model.cluster.gpu_types[t], job.workers, job.workers > model.largest_node[t]) >
            0.0)
          usable += model.capacity[t];
      if (usable < job.workers)
        throw InputError("trace", fmt::format("job {}: workers", job.id),
                         fmt::format("'{}' with {} workers has a positive rate only on GPU types "
                                     "with {} GPUs in all",
                                     name, job.workers, usable));
    }
  }
  return model;
}

}  // namespace fairgpu
