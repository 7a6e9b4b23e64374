// Metrics of a simulation run, as defined in docs/design.md §6:
//   - JCT = finish - arrival; makespan = last finish - first arrival;
//     utilisation = busy GPU-seconds / (GPUs x makespan).
//   - Finish-time fairness (Themis; Shockwave eq. 9 evaluated after the fact,
//     when the remaining time R is 0 and L + W is the JCT):
//     ρ_FTF = JCT / (isolated run time x N_avg); unfair when ρ_FTF > 1.
//   - Long-term GPU-time fairness (Astraea eq. 5): ρ_job = attained GPU service
//     time / fair GPU service time; a sharing loss when ρ_job < 0.95.
//   - The same inside the tenant (Astraea eq. 13-15): the job's fair share is
//     its weight's part of the tenant's min(Demand_j, Quota_j), capped at its
//     workers; exact from the job records, see ltgf_tenant_rhos().
//   - LTGF per tenant (Astraea eq. 6-12) over fixed windows, default 1 h
//     (§6.1.4); the tenant unfairness ratio is the share of rated (tenant,
//     window) cases with ρ_tenant < 1 (§6.3). The fair share integrates
//     Demand_j exactly from the job records (arrival to finish); GPUs held
//     come from the rounds' time averages, see tenant_windows().
//   - Slowdown (Astraea §3.2): (pending + running) / running = JCT / running
//     time; running = GPU-holding time, so every wait after a preemption is
//     pending and restart overhead is running.
//   - Restart-overhead share: overhead seconds paid / JCT, summed over
//     finished jobs.
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
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fairgpu/shockwave_eval.h"
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

// Eq. 6 over all tenants of the workload, active or not: a tenant's quota
// does not grow because another tenant is idle (that is what the min with
// the demand, eq. 8, is for).
std::vector<double> tenant_quotas(const SimResult& r) {
  double weight_sum = 0.0;
  for (const auto& t : r.tenants) weight_sum += t.weight;
  std::vector<double> quota(r.tenants.size());
  for (std::size_t t = 0; t < quota.size(); ++t)
    quota[t] = r.total_gpus() * r.tenants[t].weight / weight_sum;
  return quota;
}

// Each job's index into r.tenants (a repeated name: the first), after checking
// the fields Demand_j (eq. 7) is built from.
std::vector<std::size_t> job_tenants(const SimResult& r) {
  std::map<std::string, std::size_t> index;
  for (std::size_t t = r.tenants.size(); t-- > 0;) index[r.tenants[t].name] = t;
  std::vector<std::size_t> out;
  out.reserve(r.jobs.size());
  for (const JobRecord& job : r.jobs) {
    auto it = index.find(job.tenant);
    if (it == index.end())
      throw std::invalid_argument(
          fmt::format("SimResult: job {} has tenant '{}', not one of the run's tenants", job.id,
                      job.tenant));
    if (!std::isfinite(job.arrival) || job.workers < 0 ||
        (!std::isnan(job.finish) && !(job.finish >= job.arrival)))
      throw std::invalid_argument(fmt::format(
          "SimResult: job {} has arrival {}, finish {}, {} workers; expected a finite arrival, "
          "no finish or one at or after it, workers >= 0",
          job.id, job.arrival, job.finish, job.workers));
    out.push_back(it->second);
  }
  return out;
}

// Astraea eq. 8's integrand for one tenant, min(Demand_j(t), Quota_j), as a
// step function: pieces [start, end) of constant rate > 0, in time order and
// disjoint. Demand_j (eq. 7) changes only at the arrivals and finishes of j's
// jobs, so the pieces come exactly from the job records.
struct FairPiece {
  double start, end, rate;
};

std::vector<std::vector<FairPiece>> fair_pieces(const SimResult& r,
                                                const std::vector<double>& quota, double origin,
                                                double span_end) {
  const std::size_t n = r.tenants.size();
  const std::vector<std::size_t> tenant_of = job_tenants(r);
  struct Step {
    std::size_t tenant;
    double time;
    long long delta;  // workers joining (+) or leaving (-) the demand
  };
  std::vector<Step> steps;
  steps.reserve(2 * r.jobs.size());
  for (std::size_t i = 0; i < r.jobs.size(); ++i) {
    const JobRecord& job = r.jobs[i];
    // Active over [arrival, finish); unfinished jobs until the span's end.
    // Outside [origin, span_end] there are no windows.
    const double from = std::max(job.arrival, origin);
    const double to = std::isnan(job.finish) ? span_end : std::min(job.finish, span_end);
    if (!(to > from) || job.workers == 0) continue;
    steps.push_back({tenant_of[i], from, job.workers});
    steps.push_back({tenant_of[i], to, -static_cast<long long>(job.workers)});
  }
  // By tenant, then time; steps at one instant are all applied before the
  // next piece starts, so their order among themselves does not matter.
  std::sort(steps.begin(), steps.end(), [](const Step& x, const Step& y) {
    return x.tenant != y.tenant ? x.tenant < y.tenant : x.time < y.time;
  });
  std::vector<std::vector<FairPiece>> out(n);
  long long demand = 0;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const Step& step = steps[s];
    if (s > 0 && steps[s - 1].tenant == step.tenant && demand > 0 &&
        step.time > steps[s - 1].time) {
      const double start = steps[s - 1].time;
      const double rate = std::min(static_cast<double>(demand), quota[step.tenant]);
      auto& pieces = out[step.tenant];
      // Demand changing above the quota leaves the rate as it was: one piece,
      // so a constant rate over a window is one product, not a sum.
      if (!pieces.empty() && pieces.back().end == start && pieces.back().rate == rate)
        pieces.back().end = step.time;
      else
        pieces.push_back({start, step.time, rate});
    }
    demand += step.delta;  // back to 0 after a tenant's last step
  }
  return out;
}

}  // namespace

int SimResult::total_gpus() const {
  int total = 0;
  for (int c : capacity) total += c;
  return total;
}

void check_round(const RoundSample& s, std::size_t i, double previous_end, std::size_t n,
                 std::size_t k) {
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument(fmt::format("SimResult: round {} (start {}): {}", i, s.start, what));
  };
  auto expect = [&](const char* field, std::size_t got, std::size_t want, const char* per) {
    if (got != want)
      fail(fmt::format("{} has {} entries, expected {} ({})", field, got, want, per));
  };
  if (!(s.end >= s.start)) fail(fmt::format("ends at {} before it starts", s.end));
  // The metrics walk the rounds once, in order.
  if (s.start < previous_end)
    fail(fmt::format("starts before round {} ends at {}", i - 1, previous_end));
  if (s.sparse) {
    const std::size_t m = s.sparse_tenants.size();
    expect("tenant_throughput", s.tenant_throughput.size(), 0, "sparse form");
    expect("sparse_active_jobs", s.sparse_active_jobs.size(), m, "one per listed tenant");
    expect("sparse_throughput", s.sparse_throughput.size(), m, "one per listed tenant");
    expect("sparse_gpus", s.sparse_gpus.size(), m * k, "listed tenants x GPU types");
    for (std::size_t e = 0; e < m; ++e)
      if (s.sparse_tenants[e] >= n || (e > 0 && s.sparse_tenants[e] <= s.sparse_tenants[e - 1]))
        fail(fmt::format("sparse tenants not ascending below {}", n));
    return;
  }
  expect("tenant_throughput", s.tenant_throughput.size(), n, "one per tenant");
  expect("tenant_active_jobs", s.tenant_active_jobs.size(), n, "one per tenant");
  expect("tenant_gpus", s.tenant_gpus.size(), n * k, "tenants x GPU types");
}

void check_sim_result(const SimResult& r) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("SimResult: " + what); };
  if (r.capacity.size() != r.gpu_types.size())
    fail(fmt::format("{} capacities for {} GPU types", r.capacity.size(), r.gpu_types.size()));
  for (const auto& t : r.tenants)
    if (!(t.weight > 0))
      fail(fmt::format("tenant {} has weight {}, expected > 0", t.name, t.weight));
  if (r.rounds_streamed && (!r.digest || !r.rounds.empty()))
    fail("its rounds were streamed, so it needs their digest and no kept rounds");
  double previous_end = kUnset;
  for (std::size_t i = 0; i < r.rounds.size(); ++i) {
    check_round(r.rounds[i], i, previous_end, r.tenants.size(), r.num_types());
    previous_end = r.rounds[i].end;
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

double job_slowdown(const JobRecord& job) {
  if (std::isnan(job.finish) || !(job.attained_gpu_seconds > 0) || job.workers <= 0) return kUnset;
  return job_jct(job) / (job.attained_gpu_seconds / job.workers);
}

std::vector<double> ltgf_tenant_rhos(const SimResult& r) {
  check_sim_result(r);
  std::vector<double> out(r.jobs.size(), kUnset);
  const std::vector<std::size_t> tenant_of = job_tenants(r);
  const std::vector<double> quota = tenant_quotas(r);
  // One sweep over every tenant's arrivals and finishes, by tenant then time:
  // FairShare_j (eq. 8) and Σ W_ij (eq. 13) change only there. At one instant
  // arrivals come first (a job finishing as it arrives gets a fair share of
  // 0), then job order, so the sums are added in the same order every run.
  struct Event {
    std::size_t tenant;
    double time;
    bool arrive;
    std::size_t job;
  };
  std::vector<Event> events;
  events.reserve(2 * r.jobs.size());
  for (std::size_t i = 0; i < r.jobs.size(); ++i) {
    const JobRecord& j = r.jobs[i];
    // Unfinished jobs are active to the end of the run (eq. 14's upper bound).
    const double end = std::isnan(j.finish) ? std::max(r.end, j.arrival) : j.finish;
    events.push_back({tenant_of[i], j.arrival, true, i});
    events.push_back({tenant_of[i], end, false, i});
  }
  std::sort(events.begin(), events.end(), [](const Event& x, const Event& y) {
    if (x.tenant != y.tenant) return x.tenant < y.tenant;
    if (x.time != y.time) return x.time < y.time;
    if (x.arrive != y.arrive) return x.arrive;
    return x.job < y.job;
  });

  // Jobs of one tenant with the same (workers, weight) have the same rate
  // min(workers, FairShare_j · W_ij / Σ W) at every instant: one running
  // integral per class, and a job's fair GPU-seconds (eq. 14) is the class
  // integral at its finish minus that at its arrival. Each step between
  // events touches the tenant's classes: O(jobs log jobs + events x classes),
  // classes being the few distinct (workers, weight) pairs of a tenant.
  struct Class {
    int workers;
    double weight;
    double integral = 0.0;
    int active = 0;
  };
  std::vector<Class> classes;
  std::map<std::pair<int, double>, std::size_t> class_index;
  std::vector<std::size_t> class_of(r.jobs.size());
  std::vector<double> at_arrival(r.jobs.size(), 0.0);
  std::size_t tenant = r.tenants.size();
  double now = 0.0, weights = 0.0;
  long long demand = 0;
  int active = 0;
  for (const Event& e : events) {
    if (e.tenant != tenant) {  // a new tenant: nothing active
      tenant = e.tenant;
      classes.clear();
      class_index.clear();
      now = e.time;
    }
    if (e.time > now) {
      if (active > 0 && weights > 0) {
        const double share = std::min(static_cast<double>(demand), quota[tenant]);  // eq. 8
        for (Class& c : classes)
          if (c.active > 0)  // eq. 13, capped at the job's workers as in eq. 14
            c.integral +=
                std::min(static_cast<double>(c.workers), share * c.weight / weights) *
                (e.time - now);
      }
      now = e.time;
    }
    const JobRecord& j = r.jobs[e.job];
    if (e.arrive) {
      auto [it, added] = class_index.try_emplace({j.workers, j.weight}, classes.size());
      if (added) classes.push_back({j.workers, j.weight});
      class_of[e.job] = it->second;
      Class& c = classes[it->second];
      at_arrival[e.job] = c.integral;
      ++c.active;
      ++active;
      demand += j.workers;
      weights += j.weight;
    } else {
      Class& c = classes[class_of[e.job]];
      const double fair = c.integral - at_arrival[e.job];  // eq. 14
      if (fair > 0) out[e.job] = j.attained_gpu_seconds / fair;  // eq. 15
      --c.active;
      demand -= j.workers;
      // Idle: start the weight sum afresh rather than carry round-off.
      weights = --active > 0 ? weights - j.weight : 0.0;
    }
  }
  return out;
}

namespace {

// The digest the metrics read: the one a streamed run carries (made for
// this fairness window), or one of the kept rounds.
std::shared_ptr<const RoundDigest> digest_for(const SimResult& r, double fairness_window_s) {
  if (!r.rounds_streamed) return RoundDigest::of(r, {fairness_window_s});
  if (r.digest->fairness_window_s() != fairness_window_s)
    throw std::invalid_argument(fmt::format(
        "SimResult: its rounds were digested for fairness windows of {} s, not {} s",
        r.digest->fairness_window_s(), fairness_window_s));
  return r.digest;
}

std::vector<TenantWindow> tenant_windows(const SimResult& r, const RoundDigest& digest) {
  const std::size_t n = r.tenants.size();
  const RoundDigest::Totals& totals = digest.totals();
  std::vector<TenantWindow> out;
  if (totals.rounds == 0 || n == 0) return out;

  const std::vector<double> quota = tenant_quotas(r);
  const double origin = digest.origin();
  const double span_end = std::max(r.end, totals.last_end);
  const double window_s = digest.fairness_window_s();
  const std::vector<std::vector<FairPiece>> pieces = fair_pieces(r, quota, origin, span_end);

  // Window boundaries are origin + i x w, never accumulated, so the same
  // boundary comes out the same for every round and piece that touches it
  // (RoundDigest::add computes them so too).
  auto window_start = [&](std::size_t i) { return origin + static_cast<double>(i) * window_s; };
  // Whole windows inside a run of stable rounds are one (RoundDigest::
  // merged_windows()): the window after i, and the window holding x.
  const std::map<std::size_t, std::size_t>& merged = digest.merged_windows();
  auto next_window = [&](std::size_t i) {
    const auto it = merged.find(i);
    return it == merged.end() ? i + 1 : it->second;
  };
  auto window_of = [&](double x) {  // i with window_start(i) <= x < window_start(next_window(i))
    auto i = static_cast<std::size_t>(std::max(0.0, std::floor((x - origin) / window_s)));
    while (i > 0 && window_start(i) > x) --i;  // round-off in the division
    while (window_start(i + 1) <= x) ++i;
    auto it = merged.upper_bound(i);
    if (it != merged.begin() && (--it)->second > i) i = it->first;
    return i;
  };

  // Fair share per (window, tenant): exact, the pieces are constant; each
  // tenant's pieces are in time order, so a pair's sum is added in that order.
  std::map<std::pair<std::size_t, std::size_t>, double> fair;
  for (std::size_t t = 0; t < n; ++t)
    for (const FairPiece& p : pieces[t])
      for (std::size_t i = window_of(p.start); window_start(i) < p.end; i = next_window(i))
        fair[{i, t}] += p.rate * (std::min(p.end, window_start(next_window(i))) -
                                  std::max(p.start, window_start(i)));

  // GPU-seconds held come from the digest (rounds split at the boundaries).
  // Both maps are ordered by window, then tenant: merge them.
  const auto& alloc = digest.window_gpu_seconds();
  auto a = alloc.begin();
  auto f = fair.begin();
  while (a != alloc.end() || f != fair.end()) {
    const bool take_a = f == fair.end() || (a != alloc.end() && a->first <= f->first);
    const bool take_f = a == alloc.end() || (f != fair.end() && f->first <= a->first);
    const auto key = take_a ? a->first : f->first;
    const double held = take_a ? a->second : 0.0, share = take_f ? f->second : 0.0;
    if (take_a) ++a;
    if (take_f) ++f;
    if (!(held > 0 || share > 0)) continue;
    const std::size_t i = key.first;
    out.push_back({window_start(i), std::min(window_start(next_window(i)), span_end), key.second,
                   held,
                   share, share > 0 ? held / share : kUnset});
  }
  return out;
}

}  // namespace

std::vector<TenantWindow> tenant_windows(const SimResult& r, double window_s) {
  check_sim_result(r);
  if (!(window_s > 0) || !std::isfinite(window_s))
    throw std::invalid_argument(
        fmt::format("fairness window of {} s, expected a finite length > 0", window_s));
  return tenant_windows(r, *digest_for(r, window_s));
}

namespace {

// The value of rank ceil(fraction x n) in ascending order, fraction =
// numerator / denominator in (0, 1]; integer arithmetic, since ceil(0.95 x 20)
// in doubles can land on 20 instead of 19. NaN for no values.
double nearest_rank(std::vector<double> values, std::size_t numerator, std::size_t denominator) {
  if (values.empty()) return kUnset;
  const std::size_t rank = (numerator * values.size() + denominator - 1) / denominator;  // >= 1
  auto nth = values.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

}  // namespace

double percentile_nearest_rank(std::vector<double> values, int percent) {
  if (percent < 1 || percent > 100)
    throw std::invalid_argument(fmt::format("percentile {} is not in [1, 100]", percent));
  return nearest_rank(std::move(values), static_cast<std::size_t>(percent), 100);
}

SimSummary summarise(const SimResult& r, const SummaryOptions& options) {
  check_sim_result(r);
  SimSummary s;

  // ---- jobs ----
  std::vector<double> jcts, delays, ftf, ltgf, slowdowns;
  double finished_jct_sum = 0.0;
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
      finished_jct_sum += job_jct(job);
      s.restart_overhead_s += job.overhead_seconds;
      if (double x = job_slowdown(job); !std::isnan(x)) slowdowns.push_back(x);
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
  s.p999_jct_s = nearest_rank(jcts, 999, 1000);
  s.max_jct_s = max_of(jcts);
  s.avg_queueing_delay_s = mean(delays);
  s.avg_slowdown = mean(slowdowns);
  s.p95_slowdown = percentile_nearest_rank(slowdowns, 95);
  if (finished_jct_sum > 0) s.restart_overhead_share = s.restart_overhead_s / finished_jct_sum;

  s.ftf_jobs = static_cast<int>(ftf.size());
  s.avg_ftf_rho = mean(ftf);
  s.worst_ftf_rho = max_of(ftf);
  s.unfair_fraction = fraction(unfair, ftf.size());
  const FtfFigures static_n = ftf_static_figures(r);
  s.ftf_static_contention = static_n.contention;
  s.worst_ftf_rho_static = static_n.worst_rho;
  s.unfair_fraction_static = static_n.unfair_1;
  s.unfair_fraction_static_105 = static_n.unfair_105;

  s.ltgf_jobs = static_cast<int>(ltgf.size());
  s.avg_ltgf_rho = mean(ltgf);
  s.min_ltgf_rho = min_of(ltgf);
  s.sharing_loss_fraction = fraction(sharing_loss, ltgf.size());

  {
    std::vector<double> rhos;
    std::size_t loss = 0;
    const std::vector<double> all = ltgf_tenant_rhos(r);
    for (std::size_t i = 0; i < r.jobs.size(); ++i) {
      if (std::isnan(r.jobs[i].finish) || std::isnan(all[i])) continue;
      rhos.push_back(all[i]);
      if (all[i] < kSharingLossRho) ++loss;
    }
    s.ltgf_tenant_jobs = static_cast<int>(rhos.size());
    s.avg_ltgf_tenant_rho = mean(rhos);
    s.min_ltgf_tenant_rho = min_of(rhos);
    s.tenant_sharing_loss_fraction = fraction(loss, rhos.size());
  }

  // ---- tenants over windows ----
  // The GPU integrals are sums of round pieces, so a tenant that held exactly
  // its fair share can come out at 1 - 1e-15; such round-off is not a loss.
  constexpr double kRoundOff = 1e-9;
  s.fairness_window_s = options.fairness_window_s;
  const std::shared_ptr<const RoundDigest> digest = digest_for(r, options.fairness_window_s);
  std::vector<double> tenant_rho;
  std::size_t tenant_unfair = 0;
  for (const TenantWindow& w : tenant_windows(r, *digest)) {
    if (std::isnan(w.rho)) continue;
    tenant_rho.push_back(w.rho);
    if (w.rho < kTenantUnfairRho * (1 - kRoundOff)) ++tenant_unfair;
  }
  s.tenant_windows_rated = static_cast<int>(tenant_rho.size());
  s.tenant_unfairness_ratio = fraction(tenant_unfair, tenant_rho.size());
  s.min_tenant_rho = min_of(tenant_rho);
  s.p5_tenant_rho = percentile_nearest_rank(tenant_rho, 5);

  // ---- rounds ----
  // The digest's integrals are values x round lengths, exact since the
  // values are time averages over their rounds. Time averages divide them by
  // the makespan: gaps between rounds (nothing to schedule) count as 0.
  const RoundDigest::Totals& t = digest->totals();
  s.rounds = t.rounds;
  s.recomputations = t.recomputations;
  s.compute_total_s = t.compute_total_s;
  s.busy_gpu_seconds = t.busy_gpu_seconds;
  s.contended_s = t.contended_s;
  s.idle_waiting_gpu_hours = t.idle_waiting_gpu_hours;
  s.plan_idle_waiting_gpu_hours = t.plan_idle_waiting_gpu_hours;
  // A run's points after its first were not planned: 0 s each, below every
  // recorded value (nearest rank among them all, without listing them).
  const auto unplanned = static_cast<std::size_t>(t.rounds - t.records);
  if (unplanned == 0 || t.compute_seconds.empty()) {
    s.compute_p50_s = percentile_nearest_rank(t.compute_seconds, 50);
  } else {
    const std::size_t all = unplanned + t.compute_seconds.size();
    const std::size_t rank = (50 * all + 99) / 100;  // nearest_rank's, >= 1
    if (rank <= unplanned) {
      s.compute_p50_s = 0.0;
    } else {
      std::vector<double> v = t.compute_seconds;
      auto nth = v.begin() + static_cast<std::ptrdiff_t>(rank - unplanned - 1);
      std::nth_element(v.begin(), nth, v.end());
      s.compute_p50_s = *nth;
    }
  }
  s.compute_max_s = max_of(t.compute_seconds);
  s.wall_seconds = r.wall_seconds;

  const bool has_span = s.makespan_s > 0;
  const int gpus = r.total_gpus();
  if (has_span && gpus > 0) s.utilisation = s.busy_gpu_seconds / (gpus * s.makespan_s);
  if (has_span) s.actual_throughput = t.actual_integral / s.makespan_s;
  if (has_span && t.has_estimate) s.estimated_throughput = t.estimated_integral / s.makespan_s;
  if (s.contended_s > 0) {
    s.contended_actual_throughput = t.contended_actual / s.contended_s;
    if (t.has_estimate) s.contended_estimated_throughput = t.contended_estimated / s.contended_s;
    if (gpus > 0) s.contended_utilisation = t.contended_busy / (gpus * s.contended_s);
  }
  if (s.busy_gpu_seconds > 0) s.throughput_per_busy_gpu = t.throughput_integral / s.busy_gpu_seconds;

  // Jain's index: a tenant's throughput is averaged over the time it had
  // active jobs (so a tenant that left early is not counted as starved after
  // it left), then divided by its weight (a weight-2 tenant is entitled to
  // twice the throughput). All-zero throughputs leave the index undefined.
  double sum = 0.0, sum_sq = 0.0;
  for (std::size_t j = 0; j < r.tenants.size(); ++j) {
    if (!(t.tenant_active_s[j] > 0)) continue;
    const double x = t.tenant_integral[j] / t.tenant_active_s[j] / r.tenants[j].weight;
    ++s.active_tenants;
    sum += x;
    sum_sq += x * x;
  }
  if (s.active_tenants > 0 && sum_sq > 0) s.jain_index = sum * sum / (s.active_tenants * sum_sq);
  return s;
}

}  // namespace fairgpu
