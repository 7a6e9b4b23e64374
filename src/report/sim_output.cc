// Output files of a simulation run (docs/design.md §5): per-job, per-tenant and
// per-round CSVs, the summary JSON, and text tables for a person; the metrics
// are those of docs/design.md §6 computed in sim_metrics.cc (FTF after Themis /
// Shockwave eq. 9, LTGF after Astraea eq. 5, eq. 13-15 inside the tenant and
// eq. 6-12 per tenant and window, slowdown after Astraea §3.2, normalised
// throughput after OEF §6.1.4). Formats are documented in fairgpu/sim_report.h.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fairgpu/sim_report.h"
#include "report/csv_cells.h"

namespace fairgpu {

namespace {

using Json = nlohmann::ordered_json;  // keeps fields in the documented order

// ---- CSV -------------------------------------------------------------------

using csv::add_row;
using csv::field;
using csv::num;

// ---- text ------------------------------------------------------------------

std::string fixed(double v, int precision) {
  if (std::isnan(v)) return "-";
  if (v == 0) v = 0.0;
  return fmt::format("{:.{}f}", v, precision);
}

std::string seconds_and_hours(double s) {
  if (std::isnan(s)) return "-";
  return fmt::format("{} s ({} h)", fixed(s, 1), fixed(s / 3600, 2));
}

std::string percent(double fraction) {
  return std::isnan(fraction) ? "-" : fixed(100 * fraction, 1) + " %";
}

std::string milliseconds(double s) { return std::isnan(s) ? "-" : fixed(1000 * s, 1) + " ms"; }

constexpr int kMetricW = 38;  // summary_table's metric column, indent included

// Aligned output is easier to diff without trailing blanks.
std::string trimmed_line(std::string s) {
  s.erase(s.find_last_not_of(' ') + 1);
  return s + "\n";
}

// ---- comparison ------------------------------------------------------------

// One column of compare_csv and, when in_table, of compare_table: the
// SimSummary field (its summary_json name), a two-line header in table units,
// and the scale from SI to those units.
struct CompareColumn {
  const char* key;
  const char* top;
  const char* bottom;
  double scale;
  int precision;
  double (*get)(const SimSummary&);
  bool in_table = true;
  // Wall-clock (timing.json's): in the printed table only, never in a file.
  bool timed = false;
};

const std::vector<CompareColumn>& compare_columns() {
  // The table holds 14 columns of 8 characters beside the policy names; the
  // rest (makespan-based figures among them: one tail job decides those) are
  // in compare.csv only. Finish-time fairness comes with two contentions,
  // each under its own name everywhere: "N avg" (the job's time-averaged
  // contention, Shockwave eq. 9's N_avg: unfair_fraction, worst_ftf_rho,
  // ftf_rho in jobs.csv) and "N static" (jobs / GPUs, the authors'
  // figures: the *_static keys). compare_legend() says what each table column is.
  static const std::vector<CompareColumn> columns = {
      {"avg_jct_s", "avg JCT", "h", 1 / 3600.0, 2, [](const SimSummary& s) { return s.avg_jct_s; }},
      {"p95_jct_s", "p95 JCT", "h", 1 / 3600.0, 2, [](const SimSummary& s) { return s.p95_jct_s; },
       false},
      {"p99_jct_s", "p99 JCT", "h", 1 / 3600.0, 2, [](const SimSummary& s) { return s.p99_jct_s; }},
      {"makespan_s", "make-", "span h", 1 / 3600.0, 2,
       [](const SimSummary& s) { return s.makespan_s; }},
      {"utilisation", "util", "%", 100, 1, [](const SimSummary& s) { return s.utilisation; },
       false},
      {"actual_throughput", "tput", "actual", 1, 2,
       [](const SimSummary& s) { return s.actual_throughput; }, false},
      {"estimated_throughput", "tput", "est.", 1, 2,
       [](const SimSummary& s) { return s.estimated_throughput; }, false},
      {"contended_s", "cont.", "h", 1 / 3600.0, 2, [](const SimSummary& s) { return s.contended_s; },
       false},
      {"contended_utilisation", "util", "cont. %", 100, 1,
       [](const SimSummary& s) { return s.contended_utilisation; }},
      {"contended_actual_throughput", "tput", "actual", 1, 2,
       [](const SimSummary& s) { return s.contended_actual_throughput; }},
      {"contended_estimated_throughput", "tput", "est.", 1, 2,
       [](const SimSummary& s) { return s.contended_estimated_throughput; }},
      {"throughput_per_busy_gpu", "tput per", "busy GPU", 1, 3,
       [](const SimSummary& s) { return s.throughput_per_busy_gpu; }, false},
      {"idle_waiting_gpu_hours", "idle", "wait h", 1, 1,
       [](const SimSummary& s) { return s.idle_waiting_gpu_hours; }},
      {"plan_idle_waiting_gpu_hours", "plan", "idle h", 1, 1,
       [](const SimSummary& s) { return s.plan_idle_waiting_gpu_hours; }, false},
      {"unfair_fraction", "FTF>1", "N avg", 1, 3,
       [](const SimSummary& s) { return s.unfair_fraction; }},
      {"worst_ftf_rho", "worstFTF", "N avg", 1, 2,
       [](const SimSummary& s) { return s.worst_ftf_rho; }, false},
      // Shockwave's figures: ρ_FTF with N = jobs / GPUs.
      {"worst_ftf_rho_static", "worstFTF", "N static", 1, 2,
       [](const SimSummary& s) { return s.worst_ftf_rho_static; }, false},
      {"unfair_fraction_static_105", "FTF>1.05", "N static", 1, 3,
       [](const SimSummary& s) { return s.unfair_fraction_static_105; }, false},
      {"tenant_unfairness_ratio", "tenant", "unfair", 1, 3,
       [](const SimSummary& s) { return s.tenant_unfairness_ratio; }},
      // Astraea §6.3's sharing loss in a multi-tenant cluster (eq. 15); the
      // cluster-wide eq. 5 fraction stays in compare.csv.
      {"sharing_loss_fraction", "sharing", "loss", 1, 3,
       [](const SimSummary& s) { return s.sharing_loss_fraction; }, false},
      {"tenant_sharing_loss_fraction", "sharing", "loss15", 1, 3,
       [](const SimSummary& s) { return s.tenant_sharing_loss_fraction; }},
      {"avg_slowdown", "slow-", "down", 1, 2, [](const SimSummary& s) { return s.avg_slowdown; }},
      {"jain_index", "Jain", "index", 1, 3, [](const SimSummary& s) { return s.jain_index; }},
      {"restarts", "re-", "starts", 1, 0,
       [](const SimSummary& s) { return static_cast<double>(s.restarts); }},
      {"restart_overhead_share", "restart", "ovh.", 1, 3,
       [](const SimSummary& s) { return s.restart_overhead_share; }, false},
      {"compute_p50_s", "compute", "p50 ms", 1000, 1,
       [](const SimSummary& s) { return s.compute_p50_s; }, true, true},
  };
  return columns;
}

}  // namespace

std::string jobs_csv(const SimResult& result) {
  check_sim_result(result);
  std::string out;
  add_row(out, {"job_id", "tenant", "job_type", "workers", "arrival", "first_start", "finish",
                "jct", "queueing_delay", "attained_gpu_seconds", "restarts", "preemptions",
                "cross_type_placements", "ftf_rho", "ltgf_rho", "ltgf_tenant_rho"});
  const std::vector<double> tenant_rho = ltgf_tenant_rhos(result);
  for (std::size_t i = 0; i < result.jobs.size(); ++i) {
    const JobRecord& j = result.jobs[i];
    add_row(out, {field(j.id), field(j.tenant), field(j.job_type), std::to_string(j.workers),
                  num(j.arrival), num(j.first_start), num(j.finish), num(job_jct(j)),
                  num(j.first_start - j.arrival), num(j.attained_gpu_seconds),
                  std::to_string(j.restarts), std::to_string(j.preemptions),
                  std::to_string(j.cross_type_placements), num(ftf_rho(j)), num(ltgf_rho(j)),
                  num(tenant_rho[i])});
  }
  return out;
}

namespace {

// A series file of kept rounds, written through the RoundDigest that streams
// it in a long run: one code path for both.
std::string series_csv(const SimResult& result, double window_s,
                       std::ostream* RoundDigest::Options::*stream) {
  check_sim_result(result);
  std::ostringstream out;
  RoundDigest::Options options;
  options.series_window_s = window_s;
  options.*stream = &out;
  if (result.rounds_streamed)
    throw std::invalid_argument("SimResult: its rounds were streamed; their series went to the "
                                "digest's streams");
  RoundDigest::of(result, options);
  return out.str();
}

}  // namespace

std::string tenants_csv(const SimResult& result, double window_s) {
  return series_csv(result, window_s, &RoundDigest::Options::tenants_csv);
}

std::string utilisation_csv(const SimResult& result, double window_s) {
  return series_csv(result, window_s, &RoundDigest::Options::utilisation_csv);
}

std::string tenant_windows_csv(const SimResult& result, const SummaryOptions& options) {
  std::string out;
  add_row(out,
          {"window_start", "window_end", "tenant", "alloc_gpu_seconds", "fair_gpu_seconds", "rho"});
  for (const TenantWindow& w : tenant_windows(result, options.fairness_window_s))
    add_row(out, {num(w.start), num(w.end), field(result.tenants[w.tenant].name),
                  num(w.alloc_gpu_seconds), num(w.fair_gpu_seconds), num(w.rho)});
  return out;
}

std::string summary_json(const SimResult& result, const SimSummary& s) {
  check_sim_result(result);
  Json out;
  auto real = [&out](const char* key, double v) {
    if (std::isnan(v))
      out[key] = nullptr;
    else
      out[key] = v;
  };
  out["policy"] = result.policy;
  out["level"] = result.level;
  out["round_s"] = result.round_s;
  out["gpu_types"] = result.gpu_types;
  Json capacity = Json::object();
  for (std::size_t j = 0; j < result.num_types(); ++j)
    capacity[result.gpu_types[j]] = result.capacity[j];
  out["capacity"] = std::move(capacity);
  out["total_gpus"] = result.total_gpus();
  out["tenants"] = result.tenants.size();
  out["first_arrival_s"] = result.start;  // time origin of the series (report.html's plots)

  out["jobs"] = s.jobs;
  out["finished_jobs"] = s.finished_jobs;
  out["unfinished_jobs"] = s.unfinished_jobs;
  out["never_started_jobs"] = s.never_started_jobs;
  real("makespan_s", s.makespan_s);
  real("busy_gpu_seconds", s.busy_gpu_seconds);
  real("utilisation", s.utilisation);
  real("avg_jct_s", s.avg_jct_s);
  real("p50_jct_s", s.p50_jct_s);
  real("p95_jct_s", s.p95_jct_s);
  real("p99_jct_s", s.p99_jct_s);
  real("p999_jct_s", s.p999_jct_s);
  real("max_jct_s", s.max_jct_s);
  real("avg_queueing_delay_s", s.avg_queueing_delay_s);
  real("avg_slowdown", s.avg_slowdown);
  real("p95_slowdown", s.p95_slowdown);
  out["ftf_jobs"] = s.ftf_jobs;
  real("avg_ftf_rho", s.avg_ftf_rho);
  real("worst_ftf_rho", s.worst_ftf_rho);
  real("unfair_fraction", s.unfair_fraction);
  real("ftf_static_contention", s.ftf_static_contention);
  real("worst_ftf_rho_static", s.worst_ftf_rho_static);
  real("unfair_fraction_static", s.unfair_fraction_static);
  real("unfair_fraction_static_105", s.unfair_fraction_static_105);
  out["ltgf_jobs"] = s.ltgf_jobs;
  out["ltgf_excluded_jobs"] = s.ltgf_excluded_jobs;
  real("avg_ltgf_rho", s.avg_ltgf_rho);
  real("min_ltgf_rho", s.min_ltgf_rho);
  real("sharing_loss_fraction", s.sharing_loss_fraction);
  out["ltgf_tenant_jobs"] = s.ltgf_tenant_jobs;
  real("avg_ltgf_tenant_rho", s.avg_ltgf_tenant_rho);
  real("min_ltgf_tenant_rho", s.min_ltgf_tenant_rho);
  real("tenant_sharing_loss_fraction", s.tenant_sharing_loss_fraction);
  real("fairness_window_s", s.fairness_window_s);
  out["tenant_windows_rated"] = s.tenant_windows_rated;
  real("tenant_unfairness_ratio", s.tenant_unfairness_ratio);
  real("min_tenant_rho", s.min_tenant_rho);
  real("p5_tenant_rho", s.p5_tenant_rho);
  out["active_tenants"] = s.active_tenants;
  real("jain_index", s.jain_index);
  real("actual_throughput", s.actual_throughput);
  real("estimated_throughput", s.estimated_throughput);
  real("contended_s", s.contended_s);
  real("contended_actual_throughput", s.contended_actual_throughput);
  real("contended_estimated_throughput", s.contended_estimated_throughput);
  real("contended_utilisation", s.contended_utilisation);
  real("throughput_per_busy_gpu", s.throughput_per_busy_gpu);
  real("idle_waiting_gpu_hours", s.idle_waiting_gpu_hours);
  real("plan_idle_waiting_gpu_hours", s.plan_idle_waiting_gpu_hours);
  out["restarts"] = s.restarts;
  out["preemptions"] = s.preemptions;
  out["cross_type_placements"] = s.cross_type_placements;
  real("restart_overhead_s", s.restart_overhead_s);
  real("restart_overhead_share", s.restart_overhead_share);
  out["rounds"] = s.rounds;
  out["recomputations"] = s.recomputations;
  return out.dump(2) + "\n";
}

std::string timing_json(const SimSummary& s) {
  Json out;
  auto real = [&out](const char* key, double v) {
    if (std::isnan(v))
      out[key] = nullptr;
    else
      out[key] = v;
  };
  real("wall_seconds", s.wall_seconds);
  real("compute_p50_s", s.compute_p50_s);
  real("compute_max_s", s.compute_max_s);
  real("compute_total_s", s.compute_total_s);
  return out.dump(2) + "\n";
}

std::string summary_table(const SimResult& result, const SimSummary& s) {
  check_sim_result(result);
  std::string capacity;
  for (std::size_t j = 0; j < result.num_types(); ++j)
    capacity += fmt::format("{}{} {}", j ? ", " : "", result.gpu_types[j], result.capacity[j]);
  std::string out =
      fmt::format("simulation  {}{}, round {:g} s\n", result.policy,
                  result.level.empty() ? "" : " (" + result.level + " level)", result.round_s);
  out += fmt::format("cluster     {} GPUs ({}), {} tenant{}\n", result.total_gpus(), capacity,
                     result.tenants.size(), result.tenants.size() == 1 ? "" : "s");

  auto section = [&out](std::string_view title) {
    out += fmt::format("\n{:<{}}value\n", title, kMetricW);
  };
  auto line = [&out](std::string_view metric, const std::string& value) {
    out += trimmed_line(fmt::format("  {:<{}}{}", metric, kMetricW - 2, value));
  };
  auto count = [](int v) { return std::to_string(v); };

  section("jobs and time");
  line("jobs", count(s.jobs));
  line("finished", count(s.finished_jobs));
  line("unfinished", fmt::format("{} ({} never started)", s.unfinished_jobs, s.never_started_jobs));
  line("makespan", seconds_and_hours(s.makespan_s));
  line("busy GPU time", seconds_and_hours(s.busy_gpu_seconds));
  line("utilisation, makespan", percent(s.utilisation));
  line("average JCT", seconds_and_hours(s.avg_jct_s));
  line("p50 JCT", seconds_and_hours(s.p50_jct_s));
  line("p95 JCT", seconds_and_hours(s.p95_jct_s));
  line("p99 JCT", seconds_and_hours(s.p99_jct_s));
  line("p99.9 JCT", seconds_and_hours(s.p999_jct_s));
  line("max JCT", seconds_and_hours(s.max_jct_s));
  line("average queueing delay", seconds_and_hours(s.avg_queueing_delay_s));
  line("average slowdown", fixed(s.avg_slowdown, 3));
  line("p95 slowdown", fixed(s.p95_slowdown, 3));

  section("fairness");
  line("finish-time fairness: jobs rated", count(s.ftf_jobs));
  line("average rho_FTF (N avg)", fixed(s.avg_ftf_rho, 3));
  line("worst rho_FTF (N avg)", fixed(s.worst_ftf_rho, 3));
  line(fmt::format("unfair (rho_FTF > {:g}, N avg)", kUnfairFtfRho),
       percent(s.unfair_fraction));
  line("worst rho_FTF (N static)",
       fixed(s.worst_ftf_rho_static, 3) + " (N = " + fixed(s.ftf_static_contention, 2) + ")");
  line("unfair (N static = jobs / GPUs)", percent(s.unfair_fraction_static) + " (rho > 1), " +
                                      percent(s.unfair_fraction_static_105) + " (rho > 1.05)");
  line("LTGF: jobs rated",
       fmt::format("{} ({} without a fair share, excluded)", s.ltgf_jobs, s.ltgf_excluded_jobs));
  line("average rho_job", fixed(s.avg_ltgf_rho, 3));
  line("min rho_job", fixed(s.min_ltgf_rho, 3));
  line(fmt::format("sharing-loss fraction (rho < {:g})", kSharingLossRho),
       percent(s.sharing_loss_fraction));
  line("average rho_job, eq. 15", fixed(s.avg_ltgf_tenant_rho, 3));
  line(fmt::format("sharing loss, eq. 15 (rho < {:g})", kSharingLossRho),
       percent(s.tenant_sharing_loss_fraction));
  line("LTGF per tenant: windows rated", fmt::format("{} (tenant, window) pairs, window {:g} s",
                                                     s.tenant_windows_rated, s.fairness_window_s));
  line(fmt::format("tenant unfairness ratio (rho < {:g})", kTenantUnfairRho),
       percent(s.tenant_unfairness_ratio));
  line("min rho_tenant", fixed(s.min_tenant_rho, 3));
  line("p5 rho_tenant", fixed(s.p5_tenant_rho, 3));
  line("Jain's index over tenants",
       fmt::format("{} ({} active tenant{})", fixed(s.jain_index, 3), s.active_tenants,
                   s.active_tenants == 1 ? "" : "s"));

  section("efficiency and disruption");
  line("contended time (some job waits)", seconds_and_hours(s.contended_s));
  line("utilisation, contended", percent(s.contended_utilisation));
  line("normalised throughput, contended", fixed(s.contended_actual_throughput, 3));
  line("estimated throughput, contended", fixed(s.contended_estimated_throughput, 3));
  line("normalised throughput per busy GPU", fixed(s.throughput_per_busy_gpu, 3));
  line("normalised throughput, makespan", fixed(s.actual_throughput, 3));
  line("estimated throughput, makespan", fixed(s.estimated_throughput, 3));
  line("GPUs idle while a job waited", fixed(s.idle_waiting_gpu_hours, 2) + " GPU-h");
  line("of which the plans left idle", fixed(s.plan_idle_waiting_gpu_hours, 2) + " GPU-h");
  line("restarts", count(s.restarts));
  line("preemptions", count(s.preemptions));
  line("cross-type placements", count(s.cross_type_placements));
  line("restart overhead paid", seconds_and_hours(s.restart_overhead_s));
  line("restart overhead, share of JCT", percent(s.restart_overhead_share));

  section("scheduler");
  line("rounds", fmt::format("{} ({} recomputations)", s.rounds, s.recomputations));
  line("compute per round, p50", milliseconds(s.compute_p50_s));
  line("compute per round, max", milliseconds(s.compute_max_s));
  line("compute, total", fixed(s.compute_total_s, 3) + " s");
  line("simulation wall time", fixed(s.wall_seconds, 3) + " s");
  return out;
}

std::string metric_table(const std::vector<CompareColumnInfo>& columns,
                         const std::vector<std::string>& names, std::size_t width,
                         const std::function<std::string(std::size_t, std::size_t)>& cell) {
  // Right-aligned in `width` characters; UTF-8 continuation bytes take no
  // column ("±").
  auto right = [width](const std::string& text) {
    std::size_t chars = 0;
    for (char c : text) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return std::string(width > chars ? width - chars : 0, ' ') + text;
  };
  std::size_t name_w = std::string_view("policy").size();
  for (const auto& name : names) name_w = std::max(name_w, name.size());
  std::string top = fmt::format("{:<{}}", "policy", name_w);
  std::string bottom = fmt::format("{:<{}}", "", name_w);
  for (const auto& c : columns) {
    top += " " + right(c.top);
    bottom += " " + right(c.bottom);
  }
  std::string out = trimmed_line(top) + trimmed_line(bottom);
  for (std::size_t r = 0; r < names.size(); ++r) {
    std::string line = fmt::format("{:<{}}", names[r], name_w);
    for (std::size_t c = 0; c < columns.size(); ++c) line += " " + right(cell(r, c));
    out += trimmed_line(line);
  }
  return out;
}

std::string compare_table(const std::vector<std::pair<std::string, SimSummary>>& runs) {
  std::vector<CompareColumn> columns;
  std::vector<CompareColumnInfo> info;
  for (const auto& c : compare_columns())
    if (c.in_table) {
      columns.push_back(c);
      info.push_back({c.key, c.top, c.bottom, c.scale, c.precision, c.in_table});
    }
  constexpr std::size_t kColumnW = 7;  // 12 columns of 1 + 7: 96 characters after the names
  std::vector<std::string> names;
  for (const auto& run : runs) names.push_back(run.first);

  std::string out = metric_table(info, names, kColumnW, [&](std::size_t r, std::size_t c) {
    return table_cell(columns[c].get(runs[r].second) * columns[c].scale, columns[c].precision);
  });
  if (runs.empty()) return out;
  out += compare_legend();
  // Ratios of one run to itself say nothing.
  if (runs.size() < 2) return out;

  const auto& [base_name, base] = runs.front();
  out += fmt::format("\nratio to {} (value / {}'s; - where undefined)\n", base_name, base_name);
  out += metric_table(info, names, kColumnW, [&](std::size_t r, std::size_t c) {
    const double x = compare_ratio(columns[c].get(runs[r].second), columns[c].get(runs[0].second));
    return std::isnan(x) ? std::string("-") : fixed(x, 2) + "x";
  });
  return out;
}

// More decimals where the fixed ones would show a nonzero value as 0, so a
// ratio of 14.9x never sits next to "0.0".
std::string table_cell(double v, int precision) {
  std::string text = fixed(v, precision);
  for (int p = precision + 1;
       p <= 6 && v != 0 && !std::isnan(v) && text.find_first_of("123456789") == std::string::npos;
       ++p)
    text = fixed(v, p);
  return text;
}

double compare_ratio(double value, double base) {
  if (std::isnan(value) || std::isnan(base) || base == 0) return kUnset;
  return value / base;
}

std::vector<CompareColumnInfo> compare_column_info() {
  std::vector<CompareColumnInfo> out;
  for (const auto& c : compare_columns())
    if (!c.timed) out.push_back({c.key, c.top, c.bottom, c.scale, c.precision, c.in_table});
  return out;
}

std::string compare_legend(bool with_timed) {
  std::string out =
      "\n"
      "avg JCT h       mean job completion time (finish - arrival) of finished jobs, hours\n"
      "p99 JCT h       99th percentile (nearest rank) of the same\n"
      "makespan h      last finish - first arrival (one tail job decides it)\n"
      "util cont. %    busy GPUs / all GPUs while some job waited (contended time)\n"
      "tput actual     normalised throughput achieved while some job waited (OEF 6.1.4: sum of\n"
      "                running workers' speedups, slowest GPU type = 1 per GPU)\n"
      "tput est.       the same promised by the share policy's fractional allocation: each\n"
      "                LP row's share (a tenant's job type and gang size at tenant level, a\n"
      "                group of like jobs at job level) counted up to the GPUs its jobs can\n"
      "                use, at the rates the policy planned with; assumes whole GPUs, gang\n"
      "                placement, restarts and mid-round idling cost nothing\n"
      "idle wait h     GPU-hours idle while a waiting job could have used them (work\n"
      "                conservation violations, mid-round completions included)\n"
      "FTF>1 N avg     share of finished jobs with finish-time fairness rho_FTF > 1 (Themis),\n"
      "                rho_FTF = JCT / (time alone x N avg), N avg the job's time-averaged\n"
      "                contention (Shockwave eq. 9; compare.csv's *_static columns and\n"
      "                shockwave-eval's worst/unf use N static = jobs / GPUs instead)\n"
      "tenant unfair   share of (tenant, window) pairs below their fair GPU time (Astraea 6.3)\n"
      "sharing loss15  share of finished jobs below 95% of their fair GPU time within their\n"
      "                tenant (Astraea eq. 15)\n"
      "slowdown        mean JCT / time holding GPUs\n"
      "Jain index      Jain's index of tenants' weighted normalised throughput\n"
      "restarts        job (re)starts after the first, all jobs\n"
      "makespan-based utilisation and throughput, p95 JCT and more are in compare.csv\n";
  if (with_timed)
    out +=
        "compute p50 ms  median scheduler time per scheduling point (this table only: files\n"
        "                hold it in each run's timing.json)\n";
  return out;
}

std::string compare_csv(const std::vector<std::pair<std::string, SimSummary>>& runs) {
  return compare_csv(runs, {}, std::vector<std::vector<std::string>>(runs.size()));
}

std::string compare_csv(const std::vector<std::pair<std::string, SimSummary>>& runs,
                        const std::vector<std::string>& extra_header,
                        const std::vector<std::vector<std::string>>& extra_rows) {
  if (extra_rows.size() != runs.size())
    throw std::invalid_argument("compare_csv: one row of extra cells per run expected");
  std::vector<CompareColumn> columns;  // those a file holds (timing.json has the timed)
  for (const auto& c : compare_columns())
    if (!c.timed) columns.push_back(c);
  std::vector<std::string> header = {"policy"};
  for (const auto& c : columns) header.push_back(c.key);
  for (const auto& c : columns) header.push_back(std::string(c.key) + "_ratio");
  for (const auto& h : extra_header) header.push_back(field(h));
  std::string out;
  add_row(out, header);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& [name, summary] = runs[i];
    if (extra_rows[i].size() != extra_header.size())
      throw std::invalid_argument("compare_csv: extra cells do not match their header");
    std::vector<std::string> row = {field(name)};
    for (const auto& c : columns) row.push_back(num(c.get(summary)));
    for (const auto& c : columns) row.push_back(num(compare_ratio(c.get(summary), c.get(runs[0].second))));
    for (const auto& cell : extra_rows[i]) row.push_back(field(cell));
    add_row(out, row);
  }
  return out;
}

}  // namespace fairgpu
