// `fairgpu generate` (fairgpu/workload.h): a seeded synthetic workload.
// Both styles:
// - Arrivals: Poisson process of rate arrivals_per_hour, i.e. exponential
//   inter-arrival times; the first job arrives at 0.
// - Tenants "t00".."t<N-1>" (zero-padded to at least two digits), weight 1. As
//   in OEF's evaluation (§6), a tenant mostly runs one job type: tenant i's
//   main type is pool[i % |pool|] of the pool shuffled with the seed; a job has
//   it with probability main_type_fraction, otherwise one of the pool's other
//   types, uniformly.
// - Run times are written as duration_s (isolated, slowest type); with
//   run_times, each job draws one of them uniformly (one draw, in place of
//   the style's run-time draws) and keeps the style's workers.
// Style "gavel", Gavel's job-size mix (Narayanan et al., OSDI 2020, simulation
// setup): each job's tenant uniform; run time 60 * 10^U(1.5, 3) s with
// probability 0.8, else 60 * 10^U(3, 4) s; workers 1, 2, 4, 8 with probability
// 0.7, 0.1, 0.15, 0.05.
// Style "venus", SenseTime's Venus trace as Astraea (Ye et al., TPDS 2022)
// describes it in §3.1 and Table 1:
// - Workers 1, 2, 4, 8, 16 with probability 0.525, 0.073, 0.073, 0.226, 0.103.
//   The paper gives 52.5% (1), 22.6% (8) and 10.3% ("more than 8"); the other
//   14.6% it splits between 2 and 4 without numbers, so we split it evenly, and
//   "more than 8" becomes 16 (two 8-GPU nodes, which the 800-GPU Venus cluster
//   of §6.1.3 and the built-in cluster's 24 GPUs per type both fit).
// - Run time: the overall distribution is Table 1's CDF exactly, piecewise
//   log-uniform between its points 10 min 0.673, 1 h 0.833, 6 h 0.906,
//   1 day 0.962, 6 days 0.996, with a 30 s floor (CDF 0) and a 14-day cap
//   (CDF 1: the trace is a two-week snapshot). "Larger jobs run longer" (§3.1)
//   by a Gaussian copula: a job of w workers draws a latent x = β log2(w) + Z,
//   Z ~ N(0, 1), and takes the run-time quantile u = M(x), where M is the
//   CDF of x over the worker mix (Σ_w p_w Φ(x - β log2 w)). u is then exactly
//   uniform over all jobs, so Table 1 holds whatever β is, while larger gangs
//   take higher quantiles. β = 0.12 per doubling makes single-GPU jobs 87.3%
//   under 1 h and 2.5% over 1 day (§3.1: 87.4% and 2.2%), and puts 5.4% of the
//   GPU service time (workers x run time) on 1-GPU jobs and 87.6% on >= 8-GPU
//   jobs in expectation (§3.1: 4.7% and 85.7%; with this worker mix no one β
//   hits both, and the 1-GPU run-time figures decide).
// - Tenants' demands are unbalanced over time (§3.1, Fig. 4: one tenant above
//   90% of its GPUs while another is under 50%, reversed a week later): each
//   tenant alternates between busy and quiet periods, exponential with means
//   24 h and 48 h (busy a third of the time; at 0 busy with probability 1/3,
//   the stationary state). The arrival process stays Poisson at the given
//   rate; each job goes to a tenant with probability proportional to 5 if the
//   tenant is busy, 1 if quiet. The periods come from their own stream, seeded
//   from the main one, so they do not depend on the job count.
// Draws come from std::mt19937_64 through our own transforms (the standard
// distributions differ between standard libraries), so a seed gives the same
// workload everywhere. Per job, in order: inter-arrival (not for the first),
// tenant, main-or-other, other type (only if drawn), then for gavel size
// class, run time, workers; for venus workers, then two draws for Z
// (Box-Muller). Venus seeds the periods' stream with the main stream's draw
// after the pool shuffle.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numbers>
#include <random>
#include <set>
#include <string>

#include "fairgpu/input_error.h"
#include "fairgpu/workload.h"
#include "text_input.h"
#include "trace/shockwave_generator.h"

namespace fairgpu {

namespace {

[[noreturn]] void bad_option(const std::string& option, const std::string& problem) {
  throw InputError("generate", option, problem);
}

std::string zero_padded(std::size_t i, std::size_t n, std::size_t min_width) {
  std::size_t width = std::max(min_width, std::to_string(n).size());
  return fmt::format("{:0{}}", i, width);
}

// --- Venus (Astraea §3.1, Table 1) ---

struct CdfPoint {
  double run_time_s;
  double cdf;
};
// Table 1's Venus row, between a 30 s floor and a 14-day cap.
constexpr CdfPoint kVenusRunTime[] = {{30.0, 0.0},      {600.0, 0.673},   {3600.0, 0.833},
                                      {21600.0, 0.906}, {86400.0, 0.962}, {518400.0, 0.996},
                                      {1209600.0, 1.0}};
struct WorkerShare {
  int workers;
  double probability;
};
constexpr WorkerShare kVenusWorkers[] = {
    {1, 0.525}, {2, 0.073}, {4, 0.073}, {8, 0.226}, {16, 0.103}};
constexpr double kVenusShiftPerDoubling = 0.12;  // β
constexpr double kBusyMeanS = 24 * 3600.0;
constexpr double kQuietMeanS = 48 * 3600.0;
constexpr double kBusyIntensity = 5.0;  // relative to a quiet tenant's 1

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

double venus_shift(int workers) { return kVenusShiftPerDoubling * std::log2(workers); }

// The run time at quantile u of Table 1's distribution (log-linear between points).
double venus_run_time(double u) {
  const std::size_t n = std::size(kVenusRunTime);
  for (std::size_t i = 1; i < n; ++i) {
    const CdfPoint& lo = kVenusRunTime[i - 1];
    const CdfPoint& hi = kVenusRunTime[i];
    if (u <= hi.cdf) {
      double t = std::max(0.0, (u - lo.cdf) / (hi.cdf - lo.cdf));
      return lo.run_time_s * std::pow(hi.run_time_s / lo.run_time_s, t);
    }
  }
  return kVenusRunTime[n - 1].run_time_s;
}

// A job of `workers` GPUs with standard normal z: the quantile M(β log2 w + z).
double venus_duration(int workers, double z) {
  double x = venus_shift(workers) + z;
  double u = 0;
  for (const WorkerShare& w : kVenusWorkers)
    u += w.probability * normal_cdf(x - venus_shift(w.workers));
  return venus_run_time(std::min(1.0, u));
}

// One tenant's busy/quiet alternation, advanced lazily to the current time.
struct Phase {
  bool busy = false;
  double until_s = 0;  // the next switch
};

}  // namespace

Workload generate_workload(const GeneratorOptions& options, const ProfileCatalogue& catalogue) {
  if (options.style == "shockwave") return generate_shockwave_workload(options, catalogue);
  if (options.style != "gavel" && options.style != "venus")
    bad_option("style", fmt::format("'{}' is not a generator style (gavel, venus, shockwave)",
                                    options.style));
  const bool venus = options.style == "venus";
  if (options.jobs < 1) bad_option("jobs", fmt::format("must be >= 1, got {}", options.jobs));
  if (options.tenants < 1)
    bad_option("tenants", fmt::format("must be >= 1, got {}", options.tenants));
  if (!(options.arrivals_per_hour > 0) || !std::isfinite(options.arrivals_per_hour))
    bad_option("arrivals_per_hour",
               fmt::format("must be a finite number > 0, got {}", options.arrivals_per_hour));
  for (double r : options.run_times)
    if (!(r > 0) || !std::isfinite(r))
      bad_option("run_times", fmt::format("must be finite seconds > 0, got {}", r));
  if (!(options.main_type_fraction >= 0 && options.main_type_fraction <= 1))
    bad_option("main_type_fraction",
               fmt::format("must be between 0 and 1, got {}", options.main_type_fraction));

  std::vector<std::string> pool = options.job_types;
  if (pool.empty())
    for (const auto& p : catalogue.job_types) pool.push_back(p.name);
  if (pool.empty()) bad_option("job_types", "no job types (the profile catalogue is empty)");
  std::set<std::string> seen;
  for (const auto& name : pool) {
    if (!catalogue.find(name))
      bad_option("job_types", "'" + name + "' is not in the profiles (" + catalogue.source + ")");
    if (!seen.insert(name).second) bad_option("job_types", "'" + name + "' is listed twice");
  }

  std::mt19937_64 rng(options.seed);
  auto uniform = [&rng] { return text_input::unit_uniform(rng()); };
  auto index = [&uniform](std::size_t n) {  // uniform in [0, n)
    return std::min(static_cast<std::size_t>(uniform() * static_cast<double>(n)), n - 1);
  };

  // Fisher-Yates with our own index draws (std::shuffle's are not portable).
  for (std::size_t i = pool.size(); i > 1; --i) std::swap(pool[i - 1], pool[index(i)]);

  const auto n_tenants = static_cast<std::size_t>(options.tenants);
  const auto n_jobs = static_cast<std::size_t>(options.jobs);
  std::vector<std::string> tenant_names(n_tenants);
  for (std::size_t i = 0; i < n_tenants; ++i)
    tenant_names[i] = "t" + zero_padded(i, n_tenants - 1, 2);

  // Venus: the tenants' busy/quiet periods, from their own stream.
  std::mt19937_64 phase_rng(venus ? rng() : 0);
  auto phase_uniform = [&phase_rng] { return text_input::unit_uniform(phase_rng()); };
  auto period = [&phase_uniform](bool busy) {
    return -(busy ? kBusyMeanS : kQuietMeanS) * std::log1p(-phase_uniform());
  };
  std::vector<Phase> phases(venus ? n_tenants : 0);
  for (Phase& ph : phases) {
    ph.busy = phase_uniform() < kBusyMeanS / (kBusyMeanS + kQuietMeanS);
    ph.until_s = period(ph.busy);
  }
  auto venus_tenant = [&](double now) {
    double total = 0;
    for (Phase& ph : phases) {
      while (ph.until_s <= now) {
        ph.busy = !ph.busy;
        ph.until_s += period(ph.busy);
      }
      total += ph.busy ? kBusyIntensity : 1.0;
    }
    double target = uniform() * total;
    for (std::size_t i = 0; i < n_tenants; ++i) {
      target -= phases[i].busy ? kBusyIntensity : 1.0;
      if (target < 0) return i;
    }
    return n_tenants - 1;  // rounding
  };

  const double mean_gap_s = 3600.0 / options.arrivals_per_hour;
  std::vector<JobSpec> jobs;
  jobs.reserve(n_jobs);
  double now = 0.0;
  for (std::size_t k = 0; k < n_jobs; ++k) {
    JobSpec job;
    job.id = "j" + zero_padded(k + 1, n_jobs, 6);
    if (k > 0) now += -mean_gap_s * std::log1p(-uniform());  // 1 - u in (0, 1]
    job.arrival_s = now;
    std::size_t tenant = venus ? venus_tenant(now) : index(n_tenants);
    job.tenant = tenant_names[tenant];
    std::size_t main = tenant % pool.size();
    std::size_t type = main;
    if (uniform() >= options.main_type_fraction && pool.size() > 1) {
      type = index(pool.size() - 1);  // one of the others
      if (type >= main) ++type;
    }
    job.job_type = pool[type];
    if (venus) {
      double w = uniform();
      job.workers = kVenusWorkers[std::size(kVenusWorkers) - 1].workers;  // rounding
      for (const WorkerShare& share : kVenusWorkers) {
        if (w < share.probability) {
          job.workers = share.workers;
          break;
        }
        w -= share.probability;
      }
      if (options.run_times.empty()) {
        double r = std::sqrt(-2.0 * std::log1p(-uniform()));  // Box-Muller, cosine half
        double z = r * std::cos(2.0 * std::numbers::pi * uniform());
        job.duration_s = venus_duration(job.workers, z);
      }
    } else {
      if (options.run_times.empty()) {
        bool long_job = uniform() >= 0.8;
        double exponent = long_job ? 3.0 + uniform() : 1.5 + 1.5 * uniform();
        job.duration_s = 60.0 * std::pow(10.0, exponent);
      }
      double w = uniform();
      job.workers = w < 0.7 ? 1 : w < 0.8 ? 2 : w < 0.95 ? 4 : 8;
    }
    if (!options.run_times.empty()) job.duration_s = options.run_times[index(options.run_times.size())];
    jobs.push_back(std::move(job));
  }
  return text_input::make_workload(std::move(jobs));
}

std::vector<double> read_run_times(const std::string& path, std::size_t* zeros) {
  text_input::LineTable t(path, ',', true);
  if (!t.next()) throw InputError(path, "header", "empty file, expected a header line");
  std::vector<double> out;
  *zeros = 0;
  while (t.next()) {
    if (t.cells().size() != 1)
      t.fail("run time", fmt::format("expected one column, got {}", t.cells().size()));
    const double v = text_input::finite_cell(t.cells()[0], t, "run time");
    if (v < 0) t.fail("run time", fmt::format("must be >= 0 seconds, got {}", v));
    if (v == 0)
      ++*zeros;
    else
      out.push_back(v);
  }
  if (out.empty()) throw InputError(path, "run time", "no run time > 0");
  return out;
}

}  // namespace fairgpu
