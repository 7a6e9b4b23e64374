// `fairgpu shockwave-eval`: Shockwave's comparison (NSDI'23 §8) like for
// like: one trace, several policies, the authors' figures (makespan, average
// JCT, utilisation, worst FTF ρ and unfair fractions with the static
// contention N = jobs / GPUs at thresholds 1.0, 1.05 and 1.1, beside the
// time-averaged ρ of docs/design.md §6), plan times by active-job count; and with
// --predictor the regime predictor's accuracy on the trace (Fig. 5).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "fairgpu/scenario.h"
#include "fairgpu/shockwave_eval.h"
#include "fairgpu/sim_report.h"
#include "fairgpu/simulator.h"

namespace fairgpu::cli {
namespace {

struct EvalArgs {
  ScenarioOptions scenario;
  std::string policies =
      "shockwave,shockwave:variant=artifact,ossp,ftf:round=120,gavel:round=120,"
      "allox:alpha=0.2:round=120,max-sum-throughput:level=job:round=120";
  bool predictor = false;
  bool plan_times = false;
};

std::string pct(double v) { return std::isnan(v) ? "-" : fmt::format("{:.1f}%", 100 * v); }
std::string num(double v, int digits = 2) {
  return std::isnan(v) ? "-" : fmt::format("{:.{}f}", v, digits);
}

std::string run_eval(const EvalArgs& a) {
  Scenario sc = load_scenario(a.scenario);
  std::string out = sc.description + "\n";
  if (a.predictor) {
    out += "predictor accuracy (Fig. 5): adaptive jobs with >= 2 regimes\n";
    out += fmt::format("{:<22} {:>6} {:>12} {:>18} {:>22}\n", "predictor", "jobs", "regime ends",
                       "run-time accuracy", "regime-duration error");
    for (bool artifact : {false, true}) {
      PredictorAccuracy p = predictor_accuracy(sc.model, sc.workload, artifact);
      out += fmt::format("{:<22} {:>6} {:>12} {:>18} {:>22}\n",
                         artifact ? "artifact (counts)" : "paper (restatement)", p.jobs,
                         p.regime_ends, pct(p.runtime_accuracy), pct(p.regime_error));
    }
    return out;
  }
  std::vector<std::string> names;
  std::stringstream ss(a.policies);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) names.push_back(item);
  out += fmt::format("{:<44} {:>9} {:>9} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>8}\n",
                     "policy", "makespan", "avg JCT", "util", "worst", "unf>1", "unf>1.05",
                     "unf>1.1", "worst~", "unf~>1", "plans", "wall s");
  std::string timing;
  for (const std::string& name : names) {
    auto policy = make_round_policy(name, {});
    SimOptions so;
    SimResult r = simulate(sc.model, sc.workload, *policy, so);
    SimSummary s = summarise(r);
    FtfFigures st = ftf_static_figures(r), avg = ftf_time_averaged_figures(r);
    out += fmt::format(
        "{:<44} {:>9.0f} {:>9.0f} {:>6.3f} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>8.1f}\n",
        name, s.makespan_s, s.avg_jct_s, s.utilisation, num(st.worst_rho), pct(st.unfair_1),
        pct(st.unfair_105), pct(st.unfair_11), num(avg.worst_rho), pct(avg.unfair_1),
        s.recomputations, r.wall_seconds);
    if (a.plan_times) {
      // Scheduler compute time of the points that re-planned, by active jobs.
      std::map<int, std::vector<double>> by_bucket;
      for (const RoundSample& round : r.rounds)
        if (round.recomputed)
          by_bucket[round.active_jobs / 20 * 20].push_back(round.compute_seconds);
      timing += name + ": plan time by active jobs (p50 / max, s):";
      for (auto& [bucket, v] : by_bucket) {
        std::sort(v.begin(), v.end());
        timing += fmt::format(" [{}-{}) n={} {:.3f}/{:.3f}", bucket, bucket + 20, v.size(),
                              v[(v.size() - 1) / 2], v.back());
      }
      timing += "\n";
    }
  }
  out += fmt::format(
      "worst / unf: FTF rho with the static contention N = jobs / GPUs = {:.2f} (the authors' "
      "figures); worst~ / unf~: with the time-averaged N (docs/design.md §6)\n",
      std::max(1.0, double(sc.workload.jobs.size()) / sc.model.total_gpus));
  return out + timing;
}

}  // namespace

void add_shockwave_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands) {
  auto args = std::make_shared<EvalArgs>();
  auto* c = app.add_subcommand("shockwave-eval",
                               "Shockwave's comparison table on one trace (static-N FTF, unfair "
                               "at 1.0/1.05/1.1), or its predictor's accuracy");
  // One of the two, as simulate takes them.
  auto* cluster = c->add_option_group("cluster", "the cluster: one of");
  cluster->add_option("--cluster", args->scenario.cluster_path, "cluster JSON");
  cluster->add_option("--cluster-spec", args->scenario.cluster_spec,
                      "Gavel-style TYPE:GPUS[:GPUS_PER_NODE],... (see simulate --help)");
  cluster->require_option(1);
  c->add_option("--profiles", args->scenario.profiles_path,
                "throughputs (Gavel's or Shockwave's JSON)")
      ->required();
  c->add_option("--trace", args->scenario.trace_path, "trace (Shockwave's .trace or native CSV)")
      ->required();
  c->add_option("--restart-overhead", args->scenario.restart_overhead_s,
                "seconds of progress lost at a (re)start (default 10; Shockwave's simulator 20)");
  c->add_option("--policies", args->policies, "comma-separated policy specifiers");
  c->add_flag("--predictor", args->predictor, "report the regime predictor's accuracy instead");
  c->add_flag("--plan-times", args->plan_times, "also print plan times by active-job count");
  commands.push_back({c, [args] { return run_eval(*args); }});
}

}  // namespace fairgpu::cli
