// Metrics of a simulation run, as defined in DESIGN §6:
//   - JCT = finish - arrival; makespan = last finish - first arrival;
//     utilisation = busy GPU-seconds / (GPUs x makespan).
//   - Finish-time fairness (Themis; Shockwave eq. 9 evaluated after the fact,
//     when the remaining time R is 0 and L + W is the JCT):
//     ρ_FTF = JCT / (isolated run time x N_avg); unfair when ρ_FTF > 1.
//   - Long-term GPU-time fairness (Astraea eq. 5): ρ_job = attained GPU service
//     time / fair GPU service time; a sharing loss when ρ_job < 0.95.
//   - Normalised throughput (OEF §6.1.4): sum over running workers of the
//     speedup of the GPU type used. "actual" is what the simulated placement
//     achieved, "estimated" what the share policy's fractional allocation
//     promised.
//   - Jain's index over tenants: (Σx)² / (n Σx²).
// Choices the papers leave open are written next to the code that makes them.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "fairgpu/sim_report.h"

namespace fairgpu {

namespace {

double mean(const std::vector<double>& v) {
  if (v.empty()) return kUnset;
  double sum = 0.0;
  for (double x : v) sum += x;  // in order: the same input gives the same bits
  return sum / static_cast<double>(v.size());
}

double max_of(const std::vector<double>& v) {
  return v.empty() ? kUnset : *std::max_element(v.begin(), v.end());
}

double min_of(const std::vector<double>& v) {
  return v.empty() ? kUnset : *std::min_element(v.begin(), v.end());
}

double fraction(std::size_t part, std::size_t whole) {
  return whole == 0 ? kUnset : static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

int SimResult::total_gpus() const {
  int total = 0;
  for (int c : capacity) total += c;
  return total;
}

void check_sim_result(const SimResult& r) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("SimResult: " + what); };
  if (r.capacity.size() != r.gpu_types.size())
    fail(fmt::format("{} capacities for {} GPU types", r.capacity.size(), r.gpu_types.size()));
  for (const auto& t : r.tenants)
    if (!(t.weight > 0))
      fail(fmt::format("tenant {} has weight {}, expected > 0", t.name, t.weight));
  const std::size_t n = r.tenants.size();
  const std::size_t k = r.num_types();
  for (std::size_t i = 0; i < r.rounds.size(); ++i) {
    const RoundSample& s = r.rounds[i];
    auto expect = [&](const char* field, std::size_t got, std::size_t want, const char* per) {
      if (got != want)
        fail(fmt::format("round {} (start {}): {} has {} entries, expected {} ({})", i, s.start,
                         field, got, want, per));
    };
    if (!(s.end >= s.start))
      fail(fmt::format("round {} ends at {} before it starts at {}", i, s.end, s.start));
    expect("tenant_throughput", s.tenant_throughput.size(), n, "one per tenant");
    expect("tenant_active_jobs", s.tenant_active_jobs.size(), n, "one per tenant");
    expect("tenant_gpus", s.tenant_gpus.size(), n * k, "tenants x GPU types");
  }
}

double job_jct(const JobRecord& job) { return job.finish - job.arrival; }  // NaN stays NaN

double ftf_rho(const JobRecord& job) {
  const double isolated = job.exclusive_s * job.contention_avg;
  if (std::isnan(job.finish) || !(isolated > 0)) return kUnset;
  return job_jct(job) / isolated;
}

double ltgf_rho(const JobRecord& job) {
  if (!(job.fair_gpu_seconds > 0)) return kUnset;
  return job.attained_gpu_seconds / job.fair_gpu_seconds;
}

double percentile_nearest_rank(std::vector<double> values, int percent) {
  if (percent < 1 || percent > 100)
    throw std::invalid_argument(fmt::format("percentile {} is not in [1, 100]", percent));
  if (values.empty()) return kUnset;
  // Integer arithmetic: ceil(0.95 * 20) in doubles can land on 20 instead of 19.
  const std::size_t n = values.size();
  const std::size_t rank = (static_cast<std::size_t>(percent) * n + 99) / 100;  // >= 1
  auto nth = values.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

SimSummary summarise(const SimResult& r) {
  check_sim_result(r);
  SimSummary s;

  // ---- jobs ----
  std::vector<double> jcts, delays, ftf, ltgf;
  double first_arrival = std::numeric_limits<double>::infinity();
  double last_finish = -std::numeric_limits<double>::infinity();
  std::size_t unfair = 0, sharing_loss = 0;
  for (const JobRecord& job : r.jobs) {
    ++s.jobs;
    first_arrival = std::min(first_arrival, job.arrival);
    const bool finished = !std::isnan(job.finish);
    const bool started = !std::isnan(job.first_start);
    if (finished) {
      ++s.finished_jobs;
      last_finish = std::max(last_finish, job.finish);
      jcts.push_back(job_jct(job));
      if (double rho = ftf_rho(job); !std::isnan(rho)) {
        ftf.push_back(rho);
        if (rho > kUnfairFtfRho) ++unfair;
      }
      // A fair share of 0 (a job finishing the instant it arrives) gives no
      // ratio; counting it either way would bias the fraction, so it is left
      // out and reported as ltgf_excluded_jobs.
      if (double rho = ltgf_rho(job); std::isnan(rho)) {
        ++s.ltgf_excluded_jobs;
      } else {
        ltgf.push_back(rho);
        if (rho < kSharingLossRho) ++sharing_loss;
      }
    } else {
      ++s.unfinished_jobs;
      if (!started) ++s.never_started_jobs;
    }
    if (started) delays.push_back(job.first_start - job.arrival);
    s.restarts += job.restarts;
    s.preemptions += job.preemptions;
    s.cross_type_placements += job.cross_type_placements;
  }
  if (s.jobs > 0) {
    // Unfinished jobs were still holding or waiting for GPUs when the
    // simulation stopped, so the span runs to the stop time, not to the last
    // finish; utilisation then counts their busy time against a span that
    // contains it.
    double last = s.unfinished_jobs > 0 ? std::max(last_finish, r.end) : last_finish;
    s.makespan_s = last - first_arrival;
  }
  s.avg_jct_s = mean(jcts);
  s.p50_jct_s = percentile_nearest_rank(jcts, 50);
  s.p95_jct_s = percentile_nearest_rank(jcts, 95);
  s.p99_jct_s = percentile_nearest_rank(jcts, 99);
  s.max_jct_s = max_of(jcts);
  s.avg_queueing_delay_s = mean(delays);

  s.ftf_jobs = static_cast<int>(ftf.size());
  s.avg_ftf_rho = mean(ftf);
  s.worst_ftf_rho = max_of(ftf);
  s.unfair_fraction = fraction(unfair, ftf.size());

  s.ltgf_jobs = static_cast<int>(ltgf.size());
  s.avg_ltgf_rho = mean(ltgf);
  s.min_ltgf_rho = min_of(ltgf);
  s.sharing_loss_fraction = fraction(sharing_loss, ltgf.size());

  // ---- rounds ----
  // A round's throughput values are time averages over the round, so value x
  // length is the exact integral over it. Time averages divide those integrals
  // by the makespan: gaps between rounds (nothing to schedule) count as 0.
  const std::size_t n = r.tenants.size();
  std::vector<double> tenant_integral(n, 0.0), tenant_active_s(n, 0.0);
  std::vector<double> compute;
  double actual_integral = 0.0, estimated_integral = 0.0;
  bool has_estimate = false;
  for (const RoundSample& round : r.rounds) {
    const double len = round.end - round.start;
    ++s.rounds;
    if (round.recomputed) ++s.recomputations;
    compute.push_back(round.compute_seconds);
    s.compute_total_s += round.compute_seconds;
    s.busy_gpu_seconds += round.busy_gpu_seconds;
    for (std::size_t t = 0; t < n; ++t) {
      tenant_integral[t] += round.tenant_throughput[t] * len;
      actual_integral += round.tenant_throughput[t] * len;
      if (round.tenant_active_jobs[t] > 0) tenant_active_s[t] += len;
    }
    // A round without an estimate under a share policy had no allocation in
    // force, i.e. an estimated throughput of 0: same denominator as actual, so
    // the two compare directly (OEF §6.1.4's estimated vs actual).
    if (!std::isnan(round.estimated_throughput)) {
      has_estimate = true;
      estimated_integral += round.estimated_throughput * len;
    }
  }
  s.compute_p50_s = percentile_nearest_rank(compute, 50);
  s.compute_max_s = max_of(compute);
  s.wall_seconds = r.wall_seconds;

  const bool has_span = s.makespan_s > 0;
  const int gpus = r.total_gpus();
  if (has_span && gpus > 0) s.utilisation = s.busy_gpu_seconds / (gpus * s.makespan_s);
  if (has_span) s.actual_throughput = actual_integral / s.makespan_s;
  if (has_span && has_estimate) s.estimated_throughput = estimated_integral / s.makespan_s;

  // Jain's index: a tenant's throughput is averaged over the time it had
  // active jobs (so a tenant that left early is not counted as starved after
  // it left), then divided by its weight (a weight-2 tenant is entitled to
  // twice the throughput). All-zero throughputs leave the index undefined.
  double sum = 0.0, sum_sq = 0.0;
  for (std::size_t t = 0; t < n; ++t) {
    if (!(tenant_active_s[t] > 0)) continue;
    const double x = tenant_integral[t] / tenant_active_s[t] / r.tenants[t].weight;
    ++s.active_tenants;
    sum += x;
    sum_sq += x * x;
  }
  if (s.active_tenants > 0 && sum_sq > 0) s.jain_index = sum * sum / (s.active_tenants * sum_sq);
  return s;
}

}  // namespace fairgpu
