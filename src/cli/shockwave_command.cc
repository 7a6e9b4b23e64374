// `fairgpu shockwave-eval`: Shockwave's comparison (NSDI'23 §8) like for
// like: one trace, several policies, the authors' figures (makespan, average
// JCT, utilisation, worst FTF ρ and unfair fractions with the static
// contention N = jobs / GPUs at thresholds 1.0, 1.05 and 1.1, beside the
// time-averaged ρ of docs/design.md §6), plan times by active-job count; and with
// --predictor the regime predictor's accuracy on the trace (Fig. 5). The runs
// are compare's (run_shockwave_compare): the same files and progress lines.
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
  std::string out;
  bool quiet = false;
  ReportOptions report;
};

std::string pct(double v) { return std::isnan(v) ? "-" : fmt::format("{:.1f}%", 100 * v); }

std::string run_eval(const EvalArgs& a) {
  if (a.predictor) {
    Scenario sc = load_scenario(a.scenario);
    std::string out = sc.description + "\n";
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
  // The runs go through compare: the same files (compare.csv, report.html,
  // figures/, <policy>/...), a progress line per finished run, --quiet.
  ShockwaveCompareArgs c;
  c.scenario = a.scenario;
  c.policies = a.policies;
  c.out = a.out;
  c.quiet = a.quiet;
  c.plan_times = a.plan_times;
  c.report = a.report;
  return run_shockwave_compare(c);
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
  c->add_option("--out", args->out,
                "folder for the outputs, as compare writes them (default "
                "fairgpu-out/shockwave-eval): compare.csv, report.html, figures/, <policy>/");
  c->add_flag("--quiet", args->quiet, "no progress lines on stderr (one per finished run)");
  add_report_options(c, args->report);
  commands.push_back({c, [args] { return run_eval(*args); }});
}

}  // namespace fairgpu::cli
