// `fairgpu generate` (fairgpu/workload.h): a seeded synthetic workload.
// - Arrivals: Poisson process of rate arrivals_per_hour, i.e. exponential
//   inter-arrival times; the first job arrives at 0.
// - Sizes, Gavel's job-size mix (Narayanan et al., OSDI 2020, simulation setup): run time
//   60 * 10^U(1.5, 3) s with probability 0.8, else 60 * 10^U(3, 4) s, written
//   as duration_s (isolated, slowest type); workers 1, 2, 4, 8 with
//   probability 0.7, 0.1, 0.15, 0.05.
// - Tenants "t00".."t<N-1>" (zero-padded to at least two digits), each job's
//   tenant uniform. As in OEF's evaluation (§6), a tenant mostly runs one job
//   type: tenant i's main type is pool[i % |pool|] of the pool shuffled with
//   the seed; a job has it with probability main_type_fraction, otherwise one
//   of the pool's other types, uniformly.
// Draws come from std::mt19937_64 through our own transforms (the standard
// distributions differ between standard libraries), so a seed gives the same
// workload everywhere. Per job, in order: inter-arrival (not for the first),
// tenant, main-or-other, other type (only if drawn), size class, run time,
// workers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>

#include "fairgpu/input_error.h"
#include "fairgpu/workload.h"
#include "text_input.h"

namespace fairgpu {

namespace {

[[noreturn]] void bad_option(const std::string& option, const std::string& problem) {
  throw InputError("generate", option, problem);
}

std::string zero_padded(std::size_t i, std::size_t n, std::size_t min_width) {
  std::size_t width = std::max(min_width, std::to_string(n).size());
  return fmt::format("{:0{}}", i, width);
}

}  // namespace

Workload generate_workload(const GeneratorOptions& options, const ProfileCatalogue& catalogue) {
  if (options.jobs < 1) bad_option("jobs", fmt::format("must be >= 1, got {}", options.jobs));
  if (options.tenants < 1)
    bad_option("tenants", fmt::format("must be >= 1, got {}", options.tenants));
  if (!(options.arrivals_per_hour > 0) || !std::isfinite(options.arrivals_per_hour))
    bad_option("arrivals_per_hour",
               fmt::format("must be a finite number > 0, got {}", options.arrivals_per_hour));
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

  const double mean_gap_s = 3600.0 / options.arrivals_per_hour;
  std::vector<JobSpec> jobs;
  jobs.reserve(n_jobs);
  double now = 0.0;
  for (std::size_t k = 0; k < n_jobs; ++k) {
    JobSpec job;
    job.id = "j" + zero_padded(k + 1, n_jobs, 6);
    if (k > 0) now += -mean_gap_s * std::log1p(-uniform());  // 1 - u in (0, 1]
    job.arrival_s = now;
    std::size_t tenant = index(n_tenants);
    job.tenant = tenant_names[tenant];
    std::size_t main = tenant % pool.size();
    std::size_t type = main;
    if (uniform() >= options.main_type_fraction && pool.size() > 1) {
      type = index(pool.size() - 1);  // one of the others
      if (type >= main) ++type;
    }
    job.job_type = pool[type];
    bool long_job = uniform() >= 0.8;
    double exponent = long_job ? 3.0 + uniform() : 1.5 + 1.5 * uniform();
    job.duration_s = 60.0 * std::pow(10.0, exponent);
    double w = uniform();
    job.workers = w < 0.7 ? 1 : w < 0.8 ? 2 : w < 0.95 ? 4 : 8;
    jobs.push_back(std::move(job));
  }
  return text_input::make_workload(std::move(jobs));
}

}  // namespace fairgpu
