// Loading a scenario: cluster (JSON, Alibaba node list or built-in), profiles
// (Gavel's JSON or built-in), workload (native CSV, Gavel .trace, Alibaba pod
// list or the built-in generator), then binding them (bind_model).
#include "fairgpu/scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "fairgpu/input_error.h"
#include "fairgpu/synergy.h"

namespace fairgpu {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Native CSV starts with "job_id,"; Alibaba's pod list with "name,cpu_milli";
// Gavel traces are tab-separated.
std::string detect_format(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open the file");
  std::string first;
  std::getline(in, first);
  if (ends_with(path, ".trace"))
    return std::count(first.begin(), first.end(), '\t') == 11 ? "shockwave" : "gavel";
  if (first.rfind("name,cpu_milli", 0) == 0) return "alibaba";
  // Shockwave's traces are Gavel's with `mode` and `duration`: 12 columns.
  if (std::count(first.begin(), first.end(), '\t') == 11) return "shockwave";
  if (first.find('\t') != std::string::npos) return "gavel";
  // Synergy's traces have no header: five cells, the first a job number.
  if (std::count(first.begin(), first.end(), ',') == 4 && !first.empty() &&
      std::isdigit(static_cast<unsigned char>(first[0])))
    return "synergy";
  return "native";
}

// Arrival t -> first + (t - first) x factor, for every job.
void scale_arrivals(Workload& w, double factor) {
  if (w.jobs.empty()) return;
  const double first = w.jobs.front().arrival_s;
  for (JobSpec& j : w.jobs) j.arrival_s = first + (j.arrival_s - first) * factor;
}

// Per job, from its arrival: the offset from the first arrival and the
// GPU-seconds it needs alone on the average GPU (workers x exclusive_s).
struct JobWork {
  double offset = 0.0;
  double gpu_s = 0.0;
  int workers = 1;
};

std::vector<JobWork> job_work(const ClusterModel& model, const Workload& workload) {
  std::vector<JobWork> out;
  if (workload.jobs.empty()) return out;
  const SchedulerState state = make_scheduler_state(model, workload);
  const double first = workload.jobs.front().arrival_s;
  out.reserve(state.jobs.size());
  for (std::size_t i = 0; i < state.jobs.size(); ++i) {
    const Job& j = state.jobs[i];
    out.push_back({workload.jobs[i].arrival_s - first, j.workers * j.record.exclusive_s, j.workers});
  }
  return out;
}

// window_load() of the jobs with their offsets multiplied by `factor`: the
// work done inside [0, factor x span] per GPU-second of it.
double window_load_scaled(const std::vector<JobWork>& work, double total_gpus, double span,
                          double factor) {
  const double window = factor * span;
  double inside = 0.0;
  for (const JobWork& w : work)
    inside += std::min(w.gpu_s, w.workers * (window - factor * w.offset));
  return inside / (total_gpus * window);
}

// The arrivals factor that makes window_load() `target`. window_load is
// non-increasing in the factor (each job's part inside the window, per
// window second, shrinks as the window grows), at most offered_load /
// factor, and tends to sum(workers x (1 - offset / span)) / GPUs as the
// factor tends to 0: a target at or above that limit cannot be reached by
// moving arrivals (the trace holds too few GPUs' worth of jobs).
double factor_for_window_load(const std::vector<JobWork>& work, double total_gpus, double span,
                              double offered, double target) {
  double limit = 0.0;
  for (const JobWork& w : work)
    if (w.gpu_s > 0) limit += w.workers * (1.0 - w.offset / span);
  limit /= total_gpus;
  if (!(target < limit))
    throw InputError(
        "options", "load",
        fmt::format("{:g} cannot be reached by moving arrivals: with its arrivals compressed to "
                    "nothing this workload keeps at most {:.3g} of the {} GPUs busy over its "
                    "arrival window (its jobs hold too few GPUs); give a smaller cluster or "
                    "other arrivals (--arrivals poisson:R)",
                    target, limit, total_gpus));
  double hi = offered / target;  // window_load(hi) <= offered / hi = target
  double lo = hi;
  while (window_load_scaled(work, total_gpus, span, lo) < target) lo /= 2;  // ends: limit > target
  for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (window_load_scaled(work, total_gpus, span, mid) >= target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// --arrivals poisson:R: the jobs, in their order, arrive as a Poisson process
// of R per hour from the first arrival (exponential gaps, seeded by `seed`;
// a stream of its own, not the job types').
void replace_arrivals(const std::string& spec, std::uint64_t seed, Workload& w) {
  const std::string prefix = "poisson:";
  double rate = 0.0;
  std::size_t used = 0;
  if (spec.rfind(prefix, 0) == 0) {
    try {
      rate = std::stod(spec.substr(prefix.size()), &used);
    } catch (const std::exception&) {
      used = 0;
    }
  }
  if (used == 0 || used != spec.size() - prefix.size() || !(rate > 0) || !std::isfinite(rate))
    throw InputError("options", "arrivals",
                     fmt::format("'{}' is not poisson:R (R jobs per hour, a finite number > 0)",
                                 spec));
  if (w.jobs.empty()) return;
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  const double mean_gap_s = 3600.0 / rate;
  double now = w.jobs.front().arrival_s;
  for (std::size_t k = 0; k < w.jobs.size(); ++k) {
    if (k > 0) now += -mean_gap_s * std::log1p(-static_cast<double>(rng() >> 11) * 0x1.0p-53);
    w.jobs[k].arrival_s = now;
  }
}

// "; offered load ..." for the description: the load --load sets (over the
// arrival window) and all the work's.
std::string load_sentence(const LoadFigures& f) {
  if (!(f.span_s > 0)) return "; offered load: undefined (all jobs arrive at once)";
  return fmt::format(
      "; offered load {:.3g} over the {:.3g} h arrival window (all the work, wherever done: "
      "{:.3g})",
      f.window, f.span_s / 3600.0, f.offered);
}

// --time-scale and --load (see ScenarioOptions).
void rescale_arrivals(const ScenarioOptions& o, Scenario& sc) {
  if (!(o.time_scale > 0) || !std::isfinite(o.time_scale))
    throw InputError("options", "time-scale",
                     fmt::format("must be a finite number > 0, got {}", o.time_scale));
  if (!(o.load >= 0) || !std::isfinite(o.load))
    throw InputError(
        "options", "load",
        fmt::format("must be a finite number > 0 (0: as the trace is), got {}", o.load));
  if (o.load > 0 && o.time_scale != 1.0)
    throw InputError("options", "load", "give --load or --time-scale, not both");
  if (o.time_scale != 1.0) {
    scale_arrivals(sc.workload, o.time_scale);
    sc.description += fmt::format("; arrivals x{:g}", o.time_scale);
  }
  if (o.load > 0) {
    const LoadFigures before = load_figures(sc.model, sc.workload);
    if (!(before.offered > 0))
      throw InputError("options", "load",
                       "the workload's arrivals span no time, so its load cannot be scaled (give "
                       "a batch trace arrivals with --arrivals poisson:R)");
    const double factor = factor_for_window_load(job_work(sc.model, sc.workload),
                                                 sc.model.total_gpus, before.span_s,
                                                 before.offered, o.load);
    scale_arrivals(sc.workload, factor);
    sc.description += fmt::format("; load over the arrival window {:.3g} scaled to {:g} (arrivals "
                                  "x{:.4g})",
                                  before.window, o.load, factor);
  }
}

// A job type whose best-case CPU or memory demand for one GPU exceeds every
// node of the types it has a table for can never get it: a profile error.
void check_sensitivity_demands(const ClusterModel& m, const std::string& profiles_path) {
  for (const JobTypeProfile& p : m.profiles.job_types) {
    for (const auto& [type, table] : p.sensitivity) {
      double cpus = 0.0, memory = 0.0;
      for (const Node& n : m.cluster.nodes) {
        if (!type.empty() && m.cluster.gpu_types[n.type] != type) continue;
        cpus = std::max(cpus, n.cpus);
        memory = std::max(memory, n.memory_gb);
      }
      if (cpus == 0.0 && memory == 0.0) continue;  // no node of that type, or none declared
      const std::string where = type == kSynergyGpuType
                                    ? "by_cpus_per_gpu.3." + p.name
                                    : fmt::format("by_gpu_type.{}.{}", type, p.name);
      if (table.best_cpu_per_gpu > cpus)
        throw InputError(profiles_path, where + ".cpu_per_gpu",
                         fmt::format("best-case demand {} CPUs per GPU exceeds every node ({} "
                                     "at most)",
                                     table.best_cpu_per_gpu, cpus));
      if (table.best_memory_gb_per_gpu > memory)
        throw InputError(profiles_path, where + ".mem_gb_per_gpu",
                         fmt::format("best-case demand {} GB per GPU exceeds every node ({} "
                                     "GB at most)",
                                     table.best_memory_gb_per_gpu, memory));
    }
  }
}

// A native CSV whose header has a `mode` column carries batch-size schedules:
// its profiles are Shockwave's kind.
bool native_has_mode(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  std::string cell;
  for (char c : first + ",") {
    if (c == ',') {
      if (cell == "mode" || cell == "\"mode\"") return true;
      cell.clear();
    } else if (c != '\r' && c != ' ') {
      cell += c;
    }
  }
  return false;
}

}  // namespace

LoadFigures load_figures(const ClusterModel& model, const Workload& workload) {
  LoadFigures f;
  if (workload.jobs.size() < 2) return f;
  f.span_s = workload.jobs.back().arrival_s - workload.jobs.front().arrival_s;
  if (!(f.span_s > 0)) return f;
  const std::vector<JobWork> work = job_work(model, workload);
  double gpu_seconds = 0.0;
  for (const JobWork& w : work) gpu_seconds += w.gpu_s;
  f.offered = gpu_seconds / (model.total_gpus * f.span_s);
  f.window = window_load_scaled(work, model.total_gpus, f.span_s, 1.0);
  return f;
}

double offered_load(const ClusterModel& model, const Workload& workload) {
  return load_figures(model, workload).offered;
}

double window_load(const ClusterModel& model, const Workload& workload) {
  return load_figures(model, workload).window;
}

// The one place the built-in workload is set: `simulate`, `compare` and
// `generate` all start from it, so `generate > t.csv; simulate --trace t.csv`
// reproduces the built-in scenario.
GeneratorOptions default_generator_options() {
  GeneratorOptions g;
  g.jobs = 300;
  g.tenants = 20;
  g.arrivals_per_hour = 60.0;
  return g;
}

Scenario load_scenario(const ScenarioOptions& o) {
  Scenario sc;
  const std::string format = o.trace_path.empty()     ? ""
                             : o.trace_format.empty() ? detect_format(o.trace_path)
                                                      : o.trace_format;
  // Shockwave's throughput JSON marks a job type that cannot run on a type
  // (out of memory) with zeros: its reader leaves those out. Used with
  // Shockwave's traces, its generated mix and native CSVs with a mode column.
  const ProfileCatalogue profiles =
      o.profiles_path.empty() ? builtin_profiles()
      : format == "shockwave" || (o.trace_path.empty() && o.generator.style == "shockwave") ||
              (format == "native" && native_has_mode(o.trace_path))
          ? read_shockwave_profiles_file(o.profiles_path)
          : read_profiles_file(o.profiles_path);

  Cluster cluster;
  std::string cluster_desc;
  if (int(!o.alibaba_nodes.empty()) + int(!o.cluster_path.empty()) + int(!o.cluster_spec.empty()) >
      1)
    throw InputError("options", "cluster",
                     "give one of --cluster, --cluster-spec and --alibaba-nodes");
  // An Alibaba pod list runs on its own cluster: the node list beside it
  // when no cluster is given (the built-in 72 GPUs would hold a fraction of
  // its 6,000 pods' GPUs), else one line saying what to give.
  std::string alibaba_nodes = o.alibaba_nodes;
  const bool no_cluster = o.alibaba_nodes.empty() && o.cluster_path.empty() && o.cluster_spec.empty();
  if (format == "alibaba" && no_cluster) {
    const std::filesystem::path beside =
        std::filesystem::path(o.trace_path).parent_path() / "openb_node_list_gpu_node.csv";
    if (!std::filesystem::exists(beside))
      throw InputError("options", "cluster",
                       fmt::format("an Alibaba pod list ({}) runs on its own cluster: give "
                                   "--alibaba-nodes openb_node_list_gpu_node.csv (or --cluster / "
                                   "--cluster-spec to run it on another)",
                                   o.trace_path));
    alibaba_nodes = beside.string();
  }
  if (!alibaba_nodes.empty()) {
    auto map = default_alibaba_gpu_map();
    for (const std::string& entry : o.gpu_map) {
      auto eq = entry.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size())
        throw InputError("options", "gpu-map", fmt::format("'{}' is not MODEL=type", entry));
      map[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    cluster = read_alibaba_cluster(alibaba_nodes, map);
    cluster_desc = alibaba_nodes;
    if (o.alibaba_nodes.empty())
      cluster.notes.push_back(fmt::format("{}: the cluster of the pod list beside it (no --cluster "
                                          "or --alibaba-nodes given)",
                                          alibaba_nodes));
  } else if (!o.cluster_path.empty()) {
    cluster = ends_with(o.cluster_path, ".ini") ? read_synergy_cluster_ini(o.cluster_path)
                                                 : read_cluster_file(o.cluster_path);
    cluster_desc = o.cluster_path;
  } else if (!o.cluster_spec.empty()) {
    cluster = parse_cluster_spec(o.cluster_spec, "--cluster-spec");
    cluster_desc = "cluster " + o.cluster_spec;
  } else {
    cluster = default_cluster();
    cluster_desc = "built-in cluster";
  }
  cluster.gangs_on_one_node = o.gangs_on_one_node;
  cluster.gangs_spread_evenly = o.gangs_spread_evenly;
  if (!o.gpu_map.empty() && alibaba_nodes.empty())
    throw InputError("options", "gpu-map", "only applies with --alibaba-nodes");

  TraceOptions topt;
  topt.tenants = o.tenants;
  topt.seed = o.seed;
  topt.censored = parse_censored(o.censored);
  if (o.trace_path.empty() && !o.arrivals.empty())
    throw InputError("options", "arrivals",
                     "applies to a trace (--trace); the generated workload's arrivals are "
                     "--arrivals-per-hour");
  if (o.trace_path.empty()) {
    GeneratorOptions g = o.generator;
    g.seed = o.seed;
    sc.workload = g.style == "synergy"
                      ? generate_synergy_workload(g, parse_synergy_class_split(o.synergy_split),
                                                  profiles)
                      : generate_workload(g, profiles);
    sc.description = fmt::format("generated workload ({} jobs, {} tenants, seed {}{})", g.jobs,
                                 g.tenants, g.seed,
                                 g.style == "gavel" ? "" : ", style " + g.style);
  } else {
    if (format == "native") {
      sc.workload = read_native_trace(o.trace_path);
    } else if (format == "gavel") {
      sc.workload = read_gavel_trace(o.trace_path, topt);
    } else if (format == "synergy") {
      sc.workload = read_synergy_trace(o.trace_path, topt);
    } else if (format == "shockwave") {
      sc.workload = read_shockwave_trace(o.trace_path, topt);
    } else if (format == "alibaba") {
      for (const auto& p : profiles.job_types) topt.job_types.push_back(p.name);
      sc.workload = read_alibaba_trace(o.trace_path, topt);
    } else {
      throw InputError("options", "trace-format",
                       fmt::format("'{}' is not native, gavel, shockwave, alibaba or synergy",
                                   format));
    }
    sc.description = fmt::format("{} ({} trace, {} jobs)", o.trace_path, format,
                                 sc.workload.jobs.size());
    if (!o.arrivals.empty()) {
      replace_arrivals(o.arrivals, o.seed, sc.workload);
      sc.description += fmt::format("; arrivals {} (seed {})", o.arrivals, o.seed);
    }
  }
  sc.notes = cluster.notes;
  sc.notes.insert(sc.notes.end(), sc.workload.notes.begin(), sc.workload.notes.end());
  // bind_model knows no file names: it reports a job the profiles or the
  // cluster cannot run under "trace", a cluster without GPUs under
  // "cluster/profiles". Name the files here.
  try {
    sc.model = bind_model(cluster, profiles, sc.workload, o.restart_overhead_s);
  } catch (const InputError& e) {
    if (e.source() == "trace")
      throw InputError(o.trace_path.empty() ? "generated workload" : o.trace_path, e.field(),
                       e.problem());
    if (e.source() == "cluster/profiles") throw InputError(cluster_desc, e.field(), e.problem());
    throw;
  }
  rescale_arrivals(o, sc);
  check_sensitivity_demands(sc.model, o.profiles_path);
  std::string types;
  for (std::size_t t = 0; t < sc.model.capacity.size(); ++t)
    types += fmt::format("{}{}x{}", t ? " " : "", sc.model.capacity[t],
                         sc.model.cluster.gpu_types[t]);
  sc.description += fmt::format("; {}: {} GPUs on {} nodes ({}); profiles: {}", cluster_desc,
                                sc.model.total_gpus, sc.model.cluster.nodes.size(), types,
                                profiles.source);
  sc.load = load_figures(sc.model, sc.workload);
  sc.description += load_sentence(sc.load);
  return sc;
}

}  // namespace fairgpu
