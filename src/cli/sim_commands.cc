// `fairgpu simulate`, `fairgpu compare` and `fairgpu generate` (docs/design.md §5-§6).
// With no arguments, simulate and compare run the built-in scenario: three GPU
// types (k80, p100, v100), 72 GPUs, 300 generated jobs from 20 tenants.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "fairgpu/html_report.h"
#include "fairgpu/input_error.h"
#include "fairgpu/resource_report.h"
#include "fairgpu/policy_options.h"
#include "fairgpu/provenance.h"
#include "fairgpu/scenario.h"
#include "fairgpu/shockwave_eval.h"
#include "fairgpu/sim_report.h"
#include "fairgpu/simulator.h"
#include "fairgpu/synergy.h"

namespace fairgpu::cli {
namespace {

constexpr const char* kDefaultComparePolicies =
    "oef-noncoop,oef-coop,gavel,gavel:level=tenant,gandiva-fair,max-min";

struct SimArgs {
  ScenarioOptions scenario;
  RoundPolicyOptions policy_options;
  std::string policy = "oef-coop";
  // Share policies side by side at the same level by default: gavel both at
  // its own (job) level and at tenant level, named so.
  std::string policies = kDefaultComparePolicies;
  std::string out;
  double horizon_h = 0.0;
  bool quiet = false;
  SummaryOptions summary;  // --fairness-window
  // Per-round series (tenants.csv, utilisation.csv) averaged over windows of
  // this many seconds; 0: every round.
  double series_window_s = 600.0;
  bool json = false;  // stdout: JSON instead of the tables
  ReportOptions report;  // report.html's figures
  // compare: Shockwave's table (shockwave-eval) after compare's, and with
  // plan_times its plan times by active-job count.
  bool shockwave_table = false;
  bool plan_times = false;
  std::string command = "compare";  // the name in provenance and progress lines
};

void add_scenario_options(CLI::App* c, SimArgs& a) {
  ScenarioOptions& s = a.scenario;
  c->add_option("--cluster", s.cluster_path,
                "cluster JSON (node list or {\"k80\": {\"nodes\": 9, \"gpus_per_node\": 4}}); "
                "default: 3 nodes x 8 GPUs of k80, p100 and v100");
  c->add_option("--cluster-spec", s.cluster_spec,
                "cluster as Gavel users write it, TYPE:GPUS[:GPUS_PER_NODE] comma-separated, "
                "e.g. k80:36,p100:36,v100:36:4; GPUS_PER_NODE defaults to whole nodes of 8 "
                "GPUs, the last one holding the rest (k80:36: 4 x 8 + 4); TYPE:GPUS:1 is "
                "Gavel's default --num_gpus_per_server (every GPU its own node)");
  c->add_flag("--gangs-on-one-node", s.gangs_on_one_node,
              "never spread a gang over nodes or GPU types; a gang larger than every node of "
              "a type does not run on that type");
  c->add_flag("--gangs-spread-evenly", s.gangs_spread_evenly,
              "spread a gang over nodes only with the same number of GPUs on each, all of one "
              "type, as `serve` with the Slurm backend plans (Slurm's --gres counts GPUs per "
              "node)");
  c->add_option("--alibaba-nodes", s.alibaba_nodes,
                "cluster from Alibaba's 2023 node list CSV (openb_node_list_gpu_node.csv)");
  c->add_option("--gpu-map", s.gpu_map,
                "override the Alibaba GPU model map, MODEL=type (repeatable)");
  c->add_option("--profiles", s.profiles_path,
                "throughputs in Gavel's simulation_throughputs.json format; default: built-in");
  c->add_option("--trace", s.trace_path,
                "trace: native CSV, Gavel .trace or Alibaba pod list; default: a generated "
                "workload");
  c->add_option("--trace-format", s.trace_format,
                "native | gavel | shockwave | alibaba | synergy (default: detect)");
  c->add_option("--tenants", s.tenants,
                "spread a trace without tenants over N tenants (default: each job its own)");
  c->add_option("--seed", s.seed, "seed of the generated workload and drawn job types");
  c->add_option("--jobs", s.generator.jobs, "jobs of the generated workload (default 300)");
  c->add_option("--arrivals-per-hour", s.generator.arrivals_per_hour,
                "Poisson arrival rate of the generated workload (default 60)");
  c->add_option("--gen-tenants", s.generator.tenants,
                "tenants of the generated workload (default 20)");
  c->add_option("--gen-style", s.generator.style,
                "job mix of the generated workload: gavel (default) | venus (SenseTime's "
                "Venus, Astraea §3.1) | synergy (Synergy's model mix and durations) | shockwave "
                "(Shockwave §8.1: Accordion and GNS jobs)");
  c->add_option("--gen-split", s.synergy_split,
                "--gen-style synergy: image:language:speech shares (default 20:70:10)");
  // Aliases of policy keys (see 'fairgpu policies'): each applies to every
  // chosen policy that declares the key; a specifier's own key=value wins.
  RoundPolicyOptions& p = a.policy_options;
  c->add_option("--level", p.level,
                "alias of key level, every policy: tenant | job (default: tenant for OEF and "
                "the other share policies, job for gavel and the time-sharing policies)");
  c->add_flag_callback(
      "--tenant-demands", [&p] { p.set("demands", "on"); },
      "alias of key demands=on (the default), share policies: at tenant level demand- and "
      "gang-aware shares: each LP row's (a tenant's job type and gang size) share is capped "
      "by the GPUs its active jobs can use and its speedups are its jobs' gang rates");
  c->add_flag_callback(
      "--paper-shares", [&p] { p.set("demands", "off"); },
      "alias of key demands=off, share policies: 1-worker speedups and weights only, as in "
      "OEF");
  c->add_option("--round", p.round_s,
                "alias of key round, every policy: round / scheduling interval in seconds "
                "(default: the policy's: share policies 300, ftf and ossp 360, Shockwave 120, "
                "time-sharing policies 10)");
  auto alias = [&](const char* flag, const char* key, const char* policy, const char* help) {
    c->add_option_function<std::string>(
        flag, [&p, key, policy](const std::string& v) { p.set(key, v, policy); }, help);
  };
  alias("--lease", "lease", "",
        "alias of key lease, time-sharing policies: lease term in seconds (default 900, "
        "Astraea §6.1.3; --round sets their scheduling interval, default 10)");
  alias("--themis-filter", "filter", "themis", "alias of themis:filter=F");
  alias("--allox-alpha", "alpha", "allox", "alias of allox:alpha=A");
  c->add_option_function<std::string>(
      "--tiresias-thresholds",
      [&p](std::string v) {
        std::replace(v.begin(), v.end(), ',', '/');
        p.set("thresholds", v, "tiresias");
      },
      "alias of tiresias:thresholds=T1/T2/... (here comma-separated: T1,T2,...)");
  alias("--tiresias-promote", "promote", "tiresias", "alias of tiresias:promote=M");
  alias("--astraea-fair-share", "fair-share", "astraea", "alias of astraea:fair-share=quota|demand");
  c->add_option("--load", s.load,
                "scale arrival times (durations kept) so the offered load over the arrival "
                "window is X: the GPU-seconds the jobs, each alone on the average GPU from its "
                "arrival, do inside the window (first to last arrival), per GPU-second of it; "
                "what a work-conserving policy's utilisation over the window is while below 1 "
                "(e.g. 0.8; default: as the trace is). The printed header states it");
  c->add_option("--censored", s.censored,
                "Alibaba pods still running when the trace was cut (pod_phase Running; run "
                "time a lower bound): keep (default: recorded run time) | drop | cap=H (run "
                "time at most H hours); their count is printed");
  c->add_option("--arrivals", s.arrivals,
                "poisson:R: replace a trace's arrivals, in its order, by a Poisson process of "
                "R jobs per hour from its first arrival (seeded by --seed), e.g. for a batch "
                "trace whose jobs all arrive at 0; before --load");
  c->add_option("--time-scale", s.time_scale,
                "multiply arrival times (from the first) by F; F < 1 compresses the trace and "
                "raises its load (default 1)");
  c->add_option("--restart-overhead", s.restart_overhead_s,
                "seconds of progress a (re)started job loses (default 10; a profile may set "
                "its own)");
  c->add_option("--horizon-hours", a.horizon_h,
                "stop after this much simulated time (unfinished jobs are reported)");
  c->add_flag("--quiet", a.quiet,
              "no progress on stderr (on a terminal a line rewritten while a run goes; compare: "
              "a line per finished run, on a terminal or not)");
  c->add_option("--series-window", a.series_window_s,
                "seconds per row of tenants.csv and utilisation.csv: the rounds in each window "
                "averaged over time (default 600); 0 writes every round");
}

// A progress line on stderr for runs longer than two seconds, when stderr is
// a terminal.
std::function<void(double, double)> progress_printer(const std::string& label, bool quiet) {
  if (quiet || !isatty(fileno(stderr))) return {};
  auto start = std::chrono::steady_clock::now();
  auto last = std::make_shared<double>(0.0);
  return [start, last, label](double done, double sim_time) {
    double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (wall < 2.0 || wall - *last < 0.25) return;
    *last = wall;
    std::fprintf(stderr, "\r%s: %5.1f%% of jobs done, simulated %.1f h, %.0f s   ",
                 label.c_str(), 100.0 * done, sim_time / 3600.0, wall);
    if (done >= 1.0) std::fprintf(stderr, "\n");
  };
}

void end_progress(bool printed) {
  if (printed) std::fprintf(stderr, "\r\033[K");
}

Scenario load(const SimArgs& a) {
  Scenario sc = load_scenario(a.scenario);
  for (const std::string& note : sc.notes) std::fprintf(stderr, "fairgpu: note: %s\n", note.c_str());
  return sc;
}

// Files a run writes while it runs (its per-round series), each first as
// "<path>.partial", renamed by commit() once everything else is written; a
// run that fails leaves none behind (the destructor removes them).
class StreamedFiles {
 public:
  StreamedFiles() = default;
  StreamedFiles(const StreamedFiles&) = delete;
  StreamedFiles& operator=(const StreamedFiles&) = delete;
  ~StreamedFiles() {
    std::error_code ec;
    for (auto& f : files_) {
      f.second.close();
      if (!committed_) std::filesystem::remove(f.first + ".partial", ec);
    }
  }
  std::ostream* open(const std::string& path) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    files_.emplace_back(path, std::ofstream(path + ".partial", std::ios::binary));
    if (!files_.back().second) throw std::runtime_error("cannot write " + path + ".partial");
    return &files_.back().second;
  }
  void commit() {
    for (auto& [path, stream] : files_) {
      stream.close();
      if (!stream) throw std::runtime_error("cannot write " + path + ".partial");
    }
    for (auto& f : files_) std::filesystem::rename(f.first + ".partial", f.first);
    committed_ = true;
  }

 private:
  std::deque<std::pair<std::string, std::ofstream>> files_;  // stable addresses
  bool committed_ = false;
};

// Runs one policy with its rounds folded into a RoundDigest as they come,
// tenants.csv and utilisation.csv (and resources.csv if `resources`)
// streamed into `dir`: memory does not grow with the number of rounds.
// Plan times of the rounds that re-planned, by active jobs (shockwave-eval's
// --plan-times), gathered beside the digest.
class PlanTimes : public RoundSink {
 public:
  void chain(RoundSink* next) { next_ = next; }
  void begin(const SimResult& setup) override { next_->begin(setup); }
  void add(const RoundSample& round) override {
    if (round.recomputed) by_bucket[round.active_jobs / 20 * 20].push_back(round.compute_seconds);
    next_->add(round);
  }
  void end(const SimResult& result) override { next_->end(result); }
  std::map<int, std::vector<double>> by_bucket;

 private:
  RoundSink* next_ = nullptr;
};

SimResult run_one(const Scenario& sc, const std::string& policy_name, const SimArgs& a,
                  const std::string& dir, StreamedFiles& files, bool resources = false,
                  PlanTimes* plan_times = nullptr) {
  auto policy = make_round_policy(policy_name, a.policy_options);
  RoundDigest::Options digest_options;
  digest_options.fairness_window_s = a.summary.fairness_window_s;
  digest_options.series_window_s = a.series_window_s;
  digest_options.tenants_csv = files.open(dir + "/tenants.csv");
  digest_options.utilisation_csv = files.open(dir + "/utilisation.csv");
  if (resources) digest_options.resources_csv = files.open(dir + "/resources.csv");
  auto digest = std::make_shared<RoundDigest>(digest_options);
  SimOptions options;
  if (a.horizon_h > 0.0) options.horizon_s = sc.workload.jobs.front().arrival_s + a.horizon_h * 3600;
  options.on_progress = progress_printer(policy_name, a.quiet);
  options.sparse_tenant_series = true;  // per-round work follows active tenants, not all
  options.round_sink = digest.get();
  if (plan_times) {
    plan_times->chain(digest.get());
    options.round_sink = plan_times;
  }
  SimResult r = simulate(sc.model, sc.workload, *policy, options);
  r.digest = std::move(digest);
  end_progress(static_cast<bool>(options.on_progress));
  return r;
}

void check_args(const SimArgs& a) {
  check_report_options(a.report);
  if (!(a.horizon_h >= 0.0)) throw InputError("options", "horizon-hours", "must be >= 0");
  // Below a second a window is far shorter than any scheduling interval and
  // only multiplies tenant_windows.csv's rows.
  if (!(a.summary.fairness_window_s >= 1.0) || !std::isfinite(a.summary.fairness_window_s))
    throw InputError("options", "fairness-window",
                     fmt::format("must be a finite number of seconds >= 1, got {}",
                                 a.summary.fairness_window_s));
  // The trace readers check --tenants only for the formats that use it; a
  // negative count is a mistake whatever the trace.
  if (a.scenario.tenants < 0)
    throw InputError("options", "tenants",
                     fmt::format("must be >= 0, got {}", a.scenario.tenants));
  if (!(a.series_window_s >= 0.0) || !std::isfinite(a.series_window_s))
    throw InputError("options", "series-window",
                     fmt::format("must be a finite number of seconds >= 0 (0: every round), got {}",
                                 a.series_window_s));
}

// A run's jobs.csv, formatted on a second thread while the caller works out
// the run's summary and windows (seconds each on a 1,000,000-job run).
std::future<std::string> jobs_csv_beside(const SimResult& r) {
  return std::async(std::launch::async, [&r] { return jobs_csv(r); });
}

// The files of one run, relative to its folder (`prefix` is "" or "<policy>/"),
// but the series run_one() streams; `jobs` is jobs_csv_beside(r).
void add_run_files(std::vector<std::pair<std::string, std::string>>& files,
                   const std::string& prefix, std::future<std::string>& jobs, const SimResult& r,
                   const SimArgs& a, const std::string& summary, const SimSummary& s) {
  std::string windows = tenant_windows_csv(r, a.summary);
  files.push_back({prefix + "jobs.csv", jobs.get()});
  files.push_back({prefix + "tenant_windows.csv", std::move(windows)});
  files.push_back({prefix + "summary.json", summary});
  files.push_back({prefix + "timing.json", timing_json(s)});
}

using Json = nlohmann::ordered_json;

// A real for JSON output: null for NaN (as summary.json writes it).
Json json_number(double v) { return std::isnan(v) ? Json(nullptr) : Json(v); }
// And back: NaN for null.
double number_or_nan(const Json& v) { return v.is_number() ? v.get<double>() : kUnset; }

// Every option of the run as given (defaults filled in), for provenance.
Json options_json(const SimArgs& a) {
  const ScenarioOptions& s = a.scenario;
  Json o;
  o["cluster"] = s.cluster_path;
  o["cluster_spec"] = s.cluster_spec;
  o["alibaba_nodes"] = s.alibaba_nodes;
  o["gangs_on_one_node"] = s.gangs_on_one_node;
  o["gangs_spread_evenly"] = s.gangs_spread_evenly;
  o["gpu_map"] = s.gpu_map;
  o["profiles"] = s.profiles_path;
  o["trace"] = s.trace_path;
  o["trace_format"] = s.trace_format;
  o["tenants"] = s.tenants;
  o["seed"] = s.seed;
  o["jobs"] = s.generator.jobs;
  o["gen_tenants"] = s.generator.tenants;
  o["arrivals_per_hour"] = s.generator.arrivals_per_hour;
  o["gen_style"] = s.generator.style;
  o["main_type_fraction"] = s.generator.main_type_fraction;
  o["restart_overhead_s"] = s.restart_overhead_s;
  o["load"] = s.load;
  o["time_scale"] = s.time_scale;
  o["censored"] = s.censored;
  o["arrivals"] = s.arrivals;
  o["horizon_hours"] = a.horizon_h;
  o["fairness_window_s"] = a.summary.fairness_window_s;
  o["series_window_s"] = a.series_window_s;
  o["level"] = a.policy_options.level;
  o["round_s"] = a.policy_options.round_s;
  Json settings = Json::array();
  for (const auto& set : a.policy_options.settings)
    settings.push_back({{"policy", set.policy}, {"key", set.key}, {"value", set.value}});
  o["policy_settings"] = std::move(settings);
  return o;
}

// The input files of the scenario, each with its SHA-256; hashed once per
// command.
Json inputs_json(const SimArgs& a) {
  Json inputs = Json::array();
  auto add = [&inputs](const char* role, const std::string& path) {
    if (path.empty()) return;
    inputs.push_back({{"role", role}, {"path", path}, {"sha256", sha256_file(path)}});
  };
  add("cluster", a.scenario.cluster_path);
  add("alibaba_nodes", a.scenario.alibaba_nodes);
  add("profiles", a.scenario.profiles_path);
  add("trace", a.scenario.trace_path);
  return inputs;
}

// How a run was made: version, command, seed, inputs, options and the
// policy's resolved parameters (every key it declares).
Json provenance_json(const std::string& command, const SimArgs& a, const Json& inputs,
                     const std::string& policy) {
  Json p;
  p["fairgpu_version"] = fairgpu_version();
  p["command"] = command;
  p["seed"] = a.scenario.seed;
  p["workload"] = a.scenario.trace_path.empty() ? "generated" : "trace";
  p["inputs"] = inputs;
  p["options"] = options_json(a);
  const PolicyOptions resolved = resolve_round_policy_options(policy, a.policy_options);
  Json params = Json::object();
  for (const OptionSpec& spec : resolved.specs()) params[spec.key] = resolved.text(spec.key);
  p["policy"] = {{"specifier", policy}, {"name", resolved.policy()}, {"parameters", params}};
  return p;
}

// summary.json with the provenance first.
std::string summary_with_provenance(const SimResult& r, const SimSummary& s, const Json& prov) {
  Json out;
  out["provenance"] = prov;
  const Json summary = Json::parse(summary_json(r, s));
  for (const auto& [key, value] : summary.items()) out[key] = value;
  return out.dump(2) + "\n";
}

// The provenance columns compare.csv adds after the metrics, one row's worth.
std::vector<std::string> provenance_cells(const Json& prov, const std::string& folder) {
  std::string inputs, params;
  for (const auto& in : prov["inputs"])
    inputs +=
        fmt::format("{}{}={} sha256:{}", inputs.empty() ? "" : ";", in["role"].get<std::string>(),
                    in["path"].get<std::string>(), in["sha256"].get<std::string>());
  for (const auto& [key, value] : prov["policy"]["parameters"].items())
    params += fmt::format("{}{}={}", params.empty() ? "" : ":", key, value.get<std::string>());
  return {folder,
          prov["fairgpu_version"].get<std::string>(),
          std::to_string(prov["seed"].get<std::uint64_t>()),
          inputs,
          prov["options"].dump(),
          params};
}

const std::vector<std::string> kProvenanceColumns = {
    "folder", "fairgpu_version", "seed", "inputs", "options", "policy_parameters"};

std::string run_simulate(const SimArgs& a) {
  check_args(a);
  auto policy_check = make_round_policy(a.policy, a.policy_options);  // bad name: before loading
  Scenario sc = load(a);
  const Json prov = provenance_json("simulate", a, inputs_json(a), a.policy);
  std::string dir = a.out.empty() ? "fairgpu-out/simulate-" + policy_folder_name(a.policy) : a.out;
  // CPU/memory-sensitive job types (Synergy): their allocation and speedups.
  const bool sensitive = std::any_of(sc.model.profiles.job_types.begin(),
                                     sc.model.profiles.job_types.end(),
                                     [](const JobTypeProfile& p) { return !p.sensitivity.empty(); });
  StreamedFiles streamed;
  SimResult r = run_one(sc, a.policy, a, dir, streamed, sensitive);
  std::future<std::string> jobs = jobs_csv_beside(r);
  SimSummary s = summarise(r, a.summary);
  std::vector<std::pair<std::string, std::string>> files;
  add_run_files(files, "", jobs, r, a, summary_with_provenance(r, s, prov), s);
  const std::size_t summary_index = files.size() - 2;  // then timing.json
  std::string resources;
  if (sensitive) {
    files.push_back({"job_speedups.csv", job_speedups_csv(r)});
    resources = "\n" + resources_table(summarise_resources(r));
  }
  write_files(dir, files);
  streamed.commit();
  write_report_noting(dir, a.report);  // read back from what was written
  if (a.json) {
    Json out;
    out["command"] = "simulate";
    out["out"] = dir;
    Json names = Json::array();
    for (const auto& f : files) names.push_back(f.first);
    for (const char* f : {"tenants.csv", "utilisation.csv"}) names.push_back(f);
    if (sensitive) names.push_back("resources.csv");
    names.push_back("report.html");
    names.push_back("figures/");
    out["files"] = std::move(names);
    out["summary"] = Json::parse(files[summary_index].second);
    out["timing"] = Json::parse(files[summary_index + 1].second);
    if (sensitive) {
      const ResourceSummary rs = summarise_resources(r);
      out["resources"] = {{"avg_cpus_allocated", rs.avg_cpus_allocated},
                          {"avg_cpus_used", rs.avg_cpus_used},
                          {"avg_memory_gb_allocated", rs.avg_memory_gb_allocated},
                          {"avg_memory_gb_used", rs.avg_memory_gb_used},
                          {"avg_job_speedup", json_number(rs.avg_job_speedup)}};
    }
    return out.dump(2) + "\n";
  }
  return fmt::format(
      "{}\n{}{}\nwrote {}/ (jobs.csv, tenants.csv, utilisation.csv, "
      "tenant_windows.csv, summary.json, timing.json{}, report.html, figures/)\n",
      sc.description, summary_table(r, s), resources, dir,
      sensitive ? ", resources.csv, job_speedups.csv" : "");
}

// A compare into a folder that holds an earlier compare: the policy folders
// (those with a summary.json) of policies not in this run would sit beside
// the new results as if they belonged to them; they are removed. Nothing else
// in the folder is touched.
void remove_stale_policy_folders(const std::string& dir, const std::vector<std::string>& names) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;
  std::vector<std::string> current;
  for (const auto& n : names) current.push_back(policy_folder_name(n));
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || !std::filesystem::exists(entry.path() / "summary.json")) continue;
    if (std::find(current.begin(), current.end(), name) != current.end()) continue;
    std::filesystem::remove_all(entry.path(), ec);
    if (ec)
      throw std::runtime_error(
          fmt::format("cannot remove {}: {}", entry.path().string(), ec.message()));
  }
}

// Does any job type of the model carry CPU/memory sensitivity (Synergy)? Then
// a run also writes resources.csv and job_speedups.csv.
bool sensitive_model(const ClusterModel& m) {
  return std::any_of(m.profiles.job_types.begin(), m.profiles.job_types.end(),
                     [](const JobTypeProfile& p) { return !p.sensitivity.empty(); });
}

// Shockwave's table (NSDI'23 §8): the authors' figures per run, FTF rho with
// the static contention N = jobs / GPUs beside the time-averaged one.
struct ShockwaveRows {
  std::string rows, timing;
  void add(const std::string& name, const SimResult& r, const SimSummary& s,
           const PlanTimes* plans) {
    auto pct = [](double v) { return std::isnan(v) ? std::string("-") : fmt::format("{:.1f}%", 100 * v); };
    auto num = [](double v) { return std::isnan(v) ? std::string("-") : fmt::format("{:.2f}", v); };
    const FtfFigures st = ftf_static_figures(r), avg = ftf_time_averaged_figures(r);
    rows += fmt::format(
        "{:<44} {:>9.0f} {:>9.0f} {:>6.3f} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>8.1f}\n",
        name, s.makespan_s, s.avg_jct_s, s.utilisation, num(st.worst_rho), pct(st.unfair_1),
        pct(st.unfair_105), pct(st.unfair_11), num(avg.worst_rho), pct(avg.unfair_1),
        s.recomputations, r.wall_seconds);
    if (!plans) return;
    timing += name + ": plan time by active jobs (p50 / max, s):";
    for (auto [bucket, v] : plans->by_bucket) {
      std::sort(v.begin(), v.end());
      timing += fmt::format(" [{}-{}) n={} {:.3f}/{:.3f}", bucket, bucket + 20, v.size(),
                            v[(v.size() - 1) / 2], v.back());
    }
    timing += "\n";
  }
  std::string table(const Scenario& sc) const {
    // FTF rho under its two contentions, each group named as everywhere
    // else: "N static" (jobs / GPUs, the authors' figures) and "N avg" (the
    // job's time-averaged contention, compare's FTF>1 N avg).
    return fmt::format("{:<44} {:>9} {:>9} {:>6} {:^31} {:^15}\n", "", "", "", "",
                       "-- FTF rho, N static --", "FTF rho, N avg") +
           fmt::format("{:<44} {:>9} {:>9} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>8}\n",
                       "policy", "makespan", "avg JCT", "util", "worst", "unf>1", "unf>1.05",
                       "unf>1.1", "worst", "unf>1", "plans", "wall s") +
           rows +
           fmt::format("FTF rho, N static: with the static contention N = jobs / GPUs = {:.2f} "
                       "(the authors' figures; compare.csv's *_static keys); FTF rho, N avg: with "
                       "each job's time-averaged N (compare's FTF>1 N avg; docs/design.md §6)\n",
                       std::max(1.0, double(sc.workload.jobs.size()) / sc.model.total_gpus)) +
           timing;
  }
};

std::string run_compare(const SimArgs& args) {
  check_args(args);
  auto names = split_policies(args.policies);
  const SimArgs& a = args;
  for (const auto& n : names) make_round_policy(n, a.policy_options);  // validate all first
  Scenario sc = load(a);
  const Json inputs = inputs_json(a);
  std::vector<std::pair<std::string, SimSummary>> runs;
  std::vector<std::vector<std::string>> provenance_rows;
  std::vector<std::pair<std::string, std::string>> files;
  const std::string dir = a.out.empty() ? "fairgpu-out/" + a.command : a.out;
  // Every per-policy file simulate writes: Synergy's resources.csv and
  // job_speedups.csv too where its job types are CPU/memory-sensitive.
  const bool sensitive = sensitive_model(sc.model);
  StreamedFiles streamed;
  Json json_runs = Json::array();
  ShockwaveRows shockwave;
  const auto started = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    const Json prov = provenance_json(a.command, a, inputs, n);
    const std::string folder = policy_folder_name(n);
    PlanTimes plans;
    SimResult r = run_one(sc, n, a, dir + "/" + folder, streamed, sensitive,
                          a.plan_times ? &plans : nullptr);
    std::future<std::string> jobs = jobs_csv_beside(r);
    SimSummary s = summarise(r, a.summary);
    std::string label = n + (a.policy_options.level.empty() ? "" : "@" + r.level);
    add_run_files(files, folder + "/", jobs, r, a, summary_with_provenance(r, s, prov), s);
    if (sensitive) files.push_back({folder + "/job_speedups.csv", job_speedups_csv(r)});
    if (a.shockwave_table) shockwave.add(n, r, s, a.plan_times ? &plans : nullptr);
    runs.emplace_back(label, s);
    provenance_rows.push_back(provenance_cells(prov, folder));
    if (a.json)
      json_runs.push_back({{"policy", label},
                           {"folder", folder},
                           {"summary", Json::parse(files[files.size() - (sensitive ? 3 : 2)].second)},
                           {"timing", Json::parse(files[files.size() - (sensitive ? 2 : 1)].second)}});
    // One line per finished run, on a terminal or not (--quiet: none).
    if (!a.quiet)
      std::fprintf(stderr, "fairgpu: %s: %s done (%zu of %zu runs), %.1f s\n", a.command.c_str(),
                   n.c_str(), i + 1, names.size(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  files.push_back({"compare.csv", compare_csv(runs, kProvenanceColumns, provenance_rows)});
  remove_stale_policy_folders(dir, names);
  write_files(dir, files);
  streamed.commit();
  write_report_noting(dir, a.report);
  if (a.json) {
    // Each run's summary.json, and its ratios to the first run as
    // compare.csv's <metric>_ratio columns give them.
    for (std::size_t i = 0; i < runs.size(); ++i) {
      Json ratios = Json::object();
      for (const CompareColumnInfo& c : compare_column_info()) {
        const double x = compare_ratio(number_or_nan(json_runs[i]["summary"][c.key]),
                                       number_or_nan(json_runs[0]["summary"][c.key]));
        ratios[c.key] = json_number(x);
      }
      json_runs[i]["ratios_to_first"] = std::move(ratios);
    }
    Json out;
    out["command"] = a.command;
    out["out"] = dir;
    out["files"] = {"compare.csv", "report.html", "figures/"};
    out["runs"] = std::move(json_runs);
    return out.dump(2) + "\n";
  }
  const std::string per_policy =
      fmt::format("jobs.csv, tenants.csv, utilisation.csv, tenant_windows.csv, summary.json, "
                  "timing.json{}",
                  sensitive ? ", resources.csv, job_speedups.csv" : "");
  const std::string wrote = fmt::format(
      "wrote {}/ (compare.csv, report.html, figures/, <policy>/: {})\n", dir, per_policy);
  if (a.command == "shockwave-eval")  // its own table, as before, then what it wrote
    return fmt::format("{}\n{}{}", sc.description, shockwave.table(sc), wrote);
  return fmt::format("{}\n{}\n{}{}", sc.description, compare_table(runs),
                     a.shockwave_table ? shockwave.table(sc) + "\n" : "", wrote);
}

}  // namespace

std::string run_shockwave_compare(const ShockwaveCompareArgs& e) {
  SimArgs a;
  a.command = "shockwave-eval";
  a.scenario = e.scenario;
  a.policies = e.policies;
  a.out = e.out;
  a.quiet = e.quiet;
  a.report = e.report;
  a.shockwave_table = true;
  a.plan_times = e.plan_times;
  return run_compare(a);
}

namespace {

struct GenerateArgs {
  GeneratorOptions g = default_generator_options();
  bool json = false;
  std::string profiles;
  std::string job_types;
  std::string run_times;
  std::string synergy_split = "20:70:10";
};

std::string run_generate(const GenerateArgs& a) {
  ProfileCatalogue catalogue = a.profiles.empty()         ? builtin_profiles()
                               : a.g.style == "shockwave" ? read_shockwave_profiles_file(a.profiles)
                                                          : read_profiles_file(a.profiles);
  GeneratorOptions g = a.g;
  if (!a.job_types.empty()) {
    std::stringstream ss(a.job_types);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (!catalogue.find(item))
        throw InputError("options", "job-types",
                         fmt::format("'{}' is not in the profiles ({})", item, catalogue.source));
      g.job_types.push_back(item);
    }
  }
  if (!a.run_times.empty()) {
    std::size_t zeros = 0;
    g.run_times = read_run_times(a.run_times, &zeros);
    if (zeros > 0)
      std::fprintf(stderr, "fairgpu: note: %s: %zu of %zu run times are 0 s and are not drawn\n",
                   a.run_times.c_str(), zeros, zeros + g.run_times.size());
  }
  const Workload w =
      g.style == "synergy"
          ? generate_synergy_workload(g, parse_synergy_class_split(a.synergy_split), catalogue)
          : generate_workload(g, catalogue);
  return a.json ? write_native_trace_json(w) : write_native_trace(w);
}

}  // namespace

void add_report_options(CLI::App* c, ReportOptions& options) {
  c->add_option("--figure-axes", options.axes,
                "axes of report.html's figures that may be logarithmic (CDFs' x, series' y, a "
                "sweep's variable and metrics): auto (default: log where the values are positive "
                "and span two decades or more), linear, or log");
  c->add_flag(
      "--no-pdf", [&options](std::int64_t) { options.pdf = false; },
      "figures/ as SVG only (by default each figure also as PDF, by rsvg-convert where "
      "installed)");
}

void write_report_noting(const std::string& dir, const ReportOptions& options) {
  const std::string notes = write_report(dir, options);
  std::stringstream lines(notes);
  for (std::string line; std::getline(lines, line);)
    std::fprintf(stderr, "fairgpu: %s\n", line.c_str());
}

// Everything is computed before the first write, so bad input never leaves
// a half-written folder.
void write_files(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create {}: {}", dir, ec.message()));
  auto write = [&dir](const std::string& name, const std::string& text) {
    std::string path = dir + "/" + name;
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + path);
  };
  // Big files (a 1,000,000-job run's jobs.csv is 150 MB) are written side by
  // side: the kernel's copy into the page cache takes seconds. The others are
  // written here in order, when their turn to be waited for comes; the first
  // failure in the files' order is the one reported.
  constexpr std::size_t kBig = std::size_t{8} << 20;
  std::vector<std::future<void>> writing;
  for (const auto& [name, text] : files)
    writing.push_back(std::async(text.size() >= kBig ? std::launch::async : std::launch::deferred,
                                 write, std::cref(name), std::cref(text)));
  for (auto& w : writing) w.get();
}

std::vector<std::string> split_policies(const std::string& list) {
  std::vector<std::string> out, folders;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    // Each run writes <out>/<folder>/: a repeated name would overwrite its first run.
    if (std::find(out.begin(), out.end(), item) != out.end())
      throw InputError("options", "policies", fmt::format("'{}' is given twice", item));
    std::string folder = policy_folder_name(item);
    if (std::find(folders.begin(), folders.end(), folder) != folders.end())
      throw InputError("options", "policies",
                       fmt::format("'{}' writes to the same folder '{}' as another policy", item,
                                   folder));
    out.push_back(item);
    folders.push_back(std::move(folder));
  }
  if (out.empty()) throw InputError("options", "policies", "no policy given");
  return out;
}

void add_sim_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands) {
  auto sim = std::make_shared<SimArgs>();
  auto* simulate = app.add_subcommand(
      "simulate", "run a trace on a cluster under one policy (built-in scenario by default)");
  add_scenario_options(simulate, *sim);
  simulate->add_option("--policy", sim->policy,
                       "NAME or NAME:key=value[:key=value...], e.g. allox:alpha=0.2 (default "
                       "oef-coop); 'fairgpu policies' lists the names and each one's keys");
  simulate->add_option("--out", sim->out,
                       "folder for jobs.csv, tenants.csv, utilisation.csv, "
                       "tenant_windows.csv, summary.json, timing.json (the wall-clock "
                       "figures), report.html (default fairgpu-out/simulate-<policy>, ':' in the policy written as "
                       "'_' and '=' as '-')");
  simulate->add_flag("--json", sim->json,
                     "print JSON on stdout instead of the table: out, files, and the summary "
                     "(summary.json's content)");
  add_report_options(simulate, sim->report);
  commands.push_back({simulate, [sim] { return run_simulate(*sim); }});

  auto cmp = std::make_shared<SimArgs>();
  auto* compare = app.add_subcommand(
      "compare", "run one trace under several policies and print one table");
  add_scenario_options(compare, *cmp);
  compare->add_option("--policies", cmp->policies,
                      "comma-separated, each NAME or NAME:key=value[:key=value...], so variants "
                      "of one policy run side by side under their full names, e.g. "
                      "allox,allox:alpha=0.2 (default oef-noncoop,oef-coop,gavel,"
                      "gavel:level=tenant,gandiva-fair,max-min: gavel at its own job level and "
                      "at tenant level, where the other share policies run); 'fairgpu policies' "
                      "lists each policy's keys");
  compare->add_flag("--shockwave-table", cmp->shockwave_table,
                    "also print Shockwave's table (shockwave-eval's: makespan, FTF rho with the "
                    "static and the time-averaged contention, unfair fractions)");
  compare->add_option("--out", cmp->out,
                      "folder for the outputs (default fairgpu-out/compare); each policy's "
                      "files go to a subfolder named by it, ':' written as '_' and '=' as '-' "
                      "(allox:alpha=0.2 -> allox_alpha-0.2/)");
  const char* window_help =
      "seconds per window of the tenant fairness metric rho_tenant (Astraea eq. 12; default "
      "3600)";
  simulate->add_option("--fairness-window", sim->summary.fairness_window_s, window_help);
  compare->add_option("--fairness-window", cmp->summary.fairness_window_s, window_help);
  compare->add_flag("--json", cmp->json,
                    "print JSON on stdout instead of the table: out, files, and per run its "
                    "policy, folder, summary (its summary.json) and ratios_to_first (compare.csv's "
                    "<metric>_ratio columns)");
  add_report_options(compare, cmp->report);
  commands.push_back({compare, [cmp] { return run_compare(*cmp); }});

  auto report_dir = std::make_shared<std::string>();
  auto report_options = std::make_shared<ReportOptions>();
  auto* report = app.add_subcommand(
      "report",
      "rebuild report.html and figures/ in a results folder of simulate, compare or sweep");
  report
      ->add_option("dir", *report_dir,
                   "the results folder (holding summary.json, compare.csv or sweep.csv)")
      ->required();
  add_report_options(report, *report_options);
  commands.push_back({report, [report_dir, report_options] {
                        write_report_noting(*report_dir, *report_options);
                        return fmt::format("wrote {}/report.html and {}/figures/\n", *report_dir,
                                           *report_dir);
                      }});

  auto gen = std::make_shared<GenerateArgs>();
  auto* generate = app.add_subcommand(
      "generate", "write a synthetic trace (native CSV) to stdout: Poisson arrivals, Gavel's "
                  "or Venus's job mix (--style), tenants that mostly run one job type");
  generate->add_option("--jobs", gen->g.jobs, "number of jobs (default 300)");
  generate->add_option("--tenants,--gen-tenants", gen->g.tenants, "number of tenants (default 20)");
  generate->add_option("--style", gen->g.style,
                       "job mix: gavel (default: Gavel's sizes, tenants uniform) | venus "
                       "(SenseTime's Venus, Astraea §3.1: long-tailed run times, 1-16 GPUs, "
                       "bursty tenants) | synergy (Synergy's models and durations, 1 GPU; "
                       "needs --profiles ../shared/data/synergy/profiles.json) | shockwave "
                       "(Shockwave §8.1: Accordion/GNS batch-size schedules; needs --profiles with "
                       "its job types)");
  generate->add_option("--split", gen->synergy_split,
                       "--style synergy: image:language:speech shares (default 20:70:10)");
  generate->add_option("--arrivals-per-hour", gen->g.arrivals_per_hour,
                       "Poisson arrival rate (default 60, as the built-in workload of simulate and "
                       "compare)");
  generate->add_option("--main-type-fraction", gen->g.main_type_fraction,
                       "probability a job uses its tenant's main job type (default 0.9)");
  generate->add_option("--seed", gen->g.seed, "seed (default 1)");
  generate->add_option("--profiles", gen->profiles,
                       "draw job types from this Gavel profile file (default: built-in)");
  generate->add_option("--job-types", gen->job_types, "comma-separated pool of job types");
  generate->add_option("--runtimes", gen->run_times,
                       "draw run times (seconds) from this one-column CSV with a header, e.g. "
                       "../shared/data/philly_runtime.csv (default: the style's distribution)");
  generate->add_flag("--json", gen->json,
                     "print the trace as JSON instead of CSV: {\"columns\": [...], \"jobs\": "
                     "[{column: value}, ...]} (numbers as numbers, empty cells null)");
  commands.push_back({generate, [gen] { return run_generate(*gen); }});
}

}  // namespace fairgpu::cli
