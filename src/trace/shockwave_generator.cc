// The generator's "shockwave" style: the dynamic-adaptation mix of
// Shockwave's traces (NSDI'23 §8.1; specs/shockwave.md §1.1, §4.1):
// - arrivals: Poisson at arrivals_per_hour (the shipped traces use mean gaps
//   of 40, 25, 10 and 5 s); the first job at 0;
// - duration: one of linspace(0.2, 5, 100) hours, from four classes split at
//   20%, 50% and 90% of that list, with probabilities 0.72 / 0.2 / 0.05 /
//   0.03, uniform inside a class; isolated seconds at the initial batch size
//   on the profile's "v100" (or its first GPU type);
// - gang 1 / 2 / 4 / 8 with probability 0.6 / 0.3 / 0.09 / 0.01;
// - mode static / accordion / gns with probability 0 / 0.5 / 0.5; an
//   Accordion job under 1000 s is made static (as the authors' generator);
// - job type uniform over the profile's "<model> (batch size b)" entries of
//   Shockwave's five models that have a figure for the drawn gang.
// Tenants: uniform over options.tenants. Draws per job, in order: gap (not
// the first), class, duration, gang, mode, job type, tenant.
#include "trace/shockwave_generator.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <random>

#include "fairgpu/input_error.h"
#include "text_input.h"

namespace fairgpu {

Workload generate_shockwave_workload(const GeneratorOptions& options,
                                     const ProfileCatalogue& catalogue) {
  auto bad = [](const std::string& field, const std::string& problem) {
    throw InputError("generator", field, problem);
  };
  if (options.jobs < 1) bad("jobs", fmt::format("must be >= 1, got {}", options.jobs));
  if (options.tenants < 1) bad("tenants", fmt::format("must be >= 1, got {}", options.tenants));
  if (!(options.arrivals_per_hour > 0) || !std::isfinite(options.arrivals_per_hour))
    bad("arrivals_per_hour", "must be a finite number > 0");
  // Shockwave's runs read "v100"; a job type without figures there (one the
  // throughput JSON marks out of memory) is not drawn.
  std::string ref;
  for (const JobTypeProfile& p : catalogue.job_types)
    if (p.consolidated.count("v100")) ref = "v100";
  if (ref.empty() && !catalogue.gpu_types().empty()) ref = catalogue.gpu_types().front();
  // Candidate job types per gang size.
  constexpr std::array<int, 4> kGangs = {1, 2, 4, 8};
  constexpr std::array<double, 4> kGangP = {0.6, 0.3, 0.09, 0.01};
  std::array<std::vector<const JobTypeProfile*>, 4> types;
  for (const JobTypeProfile& p : catalogue.job_types) {
    const auto mb = split_job_type(p.name);
    if (!mb || !dataset_samples(mb->model)) continue;
    for (std::size_t g = 0; g < kGangs.size(); ++g)
      if (p.rate(ref, kGangs[g], false) > 0) types[g].push_back(&p);
  }
  if (types[0].empty())
    bad("job_types", fmt::format("the profiles ({}) have none of Shockwave's job types "
                                 "('<model> (batch size b)' for {}); try "
                                 "../shared/data/shockwave/tacc_throughputs.json",
                                 catalogue.source, adaptive_models()));
  std::vector<double> hours(100);
  for (std::size_t i = 0; i < hours.size(); ++i)
    hours[i] = 0.2 + (5.0 - 0.2) * static_cast<double>(i) / 99.0;
  constexpr std::array<std::size_t, 5> kSplit = {0, 20, 50, 90, 100};
  constexpr std::array<double, 4> kClassP = {0.72, 0.2, 0.05, 0.03};

  std::mt19937_64 rng(options.seed);
  auto uniform = [&rng] { return text_input::unit_uniform(rng()); };
  auto pick = [&](const auto& probabilities) {
    double u = uniform();
    for (std::size_t i = 0; i + 1 < probabilities.size(); ++i) {
      if (u < probabilities[i]) return i;
      u -= probabilities[i];
    }
    return probabilities.size() - 1;
  };
  auto index = [&uniform](std::size_t n) {
    return std::min(static_cast<std::size_t>(uniform() * static_cast<double>(n)), n - 1);
  };
  const double mean_gap_s = 3600.0 / options.arrivals_per_hour;
  std::vector<JobSpec> jobs;
  double now = 0.0;
  for (int k = 0; k < options.jobs; ++k) {
    if (k > 0) now += -mean_gap_s * std::log1p(-uniform());
    const std::size_t c = pick(kClassP);
    const double duration = 3600.0 * hours[kSplit[c] + index(kSplit[c + 1] - kSplit[c])];
    std::size_t g = pick(kGangP);
    while (types[g].empty()) --g;  // a profile without that gang: the next smaller
    AdaptationMode mode = uniform() < 0.5 ? AdaptationMode::kAccordion : AdaptationMode::kGns;
    if (mode == AdaptationMode::kAccordion && duration < 1000) mode = AdaptationMode::kStatic;
    const JobTypeProfile& type = *types[g][index(types[g].size())];
    JobSpec job;
    job.id = fmt::format("j{:06}", k + 1);
    job.tenant = fmt::format("t{:02}", index(static_cast<std::size_t>(options.tenants)));
    job.job_type = type.name;
    job.workers = kGangs[g];
    job.arrival_s = now;
    job.iterations = std::ceil(duration * type.rate(ref, job.workers, false));
    if (std::string problem = set_adaptation(job, mode); !problem.empty())
      bad("job_types", type.name + ": " + problem);
    jobs.push_back(std::move(job));
  }
  return text_input::make_workload(std::move(jobs));
}

}  // namespace fairgpu
