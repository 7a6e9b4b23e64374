// CPU and memory outputs (fairgpu/resource_report.h).
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "fairgpu/resource_report.h"
#include "fairgpu/sim_report.h"

namespace fairgpu {
namespace {

std::string num(double v) { return std::isnan(v) ? "" : fmt::format("{:.10g}", v); }

double run_seconds(const JobRecord& j) {
  return j.workers > 0 ? j.attained_gpu_seconds / j.workers : 0.0;
}

}  // namespace

ResourceSummary summarise_resources(const SimResult& r) {
  ResourceSummary s;
  check_sim_result(r);
  const auto digest = r.rounds_streamed ? r.digest : RoundDigest::of(r, {});
  const RoundDigest::Totals& totals = digest->totals();
  if (totals.span_s > 0) {
    s.avg_cpus_allocated = totals.cpu_seconds / totals.span_s;
    s.avg_cpus_used = totals.cpu_used_seconds / totals.span_s;
    s.avg_memory_gb_allocated = totals.memory_gb_seconds / totals.span_s;
    s.avg_memory_gb_used = totals.memory_gb_used_seconds / totals.span_s;
  }
  double sum = 0.0;
  int n = 0;
  for (const JobRecord& j : r.jobs) {
    const double t = run_seconds(j);
    if (t <= 0) continue;
    sum += j.multiplier_seconds / t;
    ++n;
  }
  if (n > 0) s.avg_job_speedup = sum / n;
  return s;
}

std::string resources_csv_header() {
  return "start,end,cpus_allocated,cpus_used,memory_gb_allocated,memory_gb_used\n";
}

std::string resources_csv_row(const RoundSample& round) {
  return fmt::format("{},{},{},{},{},{}\n", num(round.start), num(round.end),
                     num(round.cpus_allocated), num(round.cpus_used),
                     num(round.memory_gb_allocated), num(round.memory_gb_used));
}

std::string resources_csv(const SimResult& r) {
  if (r.rounds_streamed)
    throw std::invalid_argument(
        "SimResult: its rounds were streamed; resources.csv went to its digest's stream");
  std::string out = resources_csv_header();
  for (const RoundSample& round : r.rounds) out += resources_csv_row(round);
  return out;
}

std::string job_speedups_csv(const SimResult& r) {
  std::string out = "job_id,job_type,workers,run_seconds,speedup\n";
  for (const JobRecord& j : r.jobs) {
    const double t = run_seconds(j);
    // Ids and types are checked names without control characters; quote
    // them only if they hold a comma or a quote.
    auto cell = [](const std::string& v) {
      if (v.find_first_of(",\"") == std::string::npos) return v;
      std::string q = "\"";
      for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      return q + "\"";
    };
    out += fmt::format("{},{},{},{},{}\n", cell(j.id), cell(j.job_type), j.workers, num(t),
                       t > 0 ? num(j.multiplier_seconds / t) : "");
  }
  return out;
}

std::string resources_table(const ResourceSummary& s) {
  std::string out = "CPU and memory (Synergy)               value\n";
  out += fmt::format("  CPUs allocated, average              {:.1f}\n", s.avg_cpus_allocated);
  out += fmt::format("  CPUs used, average                   {:.1f}\n", s.avg_cpus_used);
  out +=
      fmt::format("  memory allocated, average            {:.1f} GB\n", s.avg_memory_gb_allocated);
  out += fmt::format("  memory used, average                 {:.1f} GB\n", s.avg_memory_gb_used);
  out +=
      fmt::format("  speedup from CPU/memory, job average {}\n",
                  std::isnan(s.avg_job_speedup) ? "-" : fmt::format("{:.3f}", s.avg_job_speedup));
  return out;
}

}  // namespace fairgpu
