// Dynamic adaptation in the scheduler state (fairgpu/scheduler.h, Job::regimes):
// a regime's rate is the profile's iterations/s for (model, batch size, gang,
// GPU type) turned into epochs/s by batch size / samples per epoch (the
// authors' duration_every_epoch, spec §1.2, without rounding).
#include <fmt/format.h>

#include <stdexcept>

#include "core/gang_rates.h"
#include "fairgpu/scheduler.h"

namespace fairgpu {

void bind_adaptation(const ClusterModel& model, const JobSpec& spec, Job& j) {
  if (!(spec.samples_per_epoch > 0))
    throw std::invalid_argument(fmt::format("job {}: regimes without samples_per_epoch", spec.id));
  j.mode = spec.mode;
  j.model = spec.model;
  j.samples_per_epoch = spec.samples_per_epoch;
  j.regimes.clear();
  double end = 0.0, exclusive = 0.0;
  for (const BatchRegime& b : spec.regimes) {
    const std::string name = batch_job_type(spec.model, b.batch_size);
    const auto index = model.profiles.index(name);
    if (!index)  // bind_model checks every regime's type: a caller bug
      throw std::invalid_argument(fmt::format("job {}: '{}' is not bound", spec.id, name));
    const JobTypeProfile& p = model.profiles.job_types[*index];
    Job::Regime r;
    r.job_type = *index;
    r.batch_size = b.batch_size;
    end += b.epochs;
    r.end_epoch = end;
    const double per_iteration = b.batch_size / spec.samples_per_epoch;  // epochs per iteration
    GangRates rates = gang_rates(model, p, j.workers, per_iteration);
    r.rate_one_node = std::move(rates.one_node);
    r.rate_spread = std::move(rates.spread);
    r.rate_best = std::move(rates.best);
    r.ref_rate = rates.ref;
    const double mean_rate = rates.capacity_mean;
    exclusive += b.epochs / mean_rate;
    j.regimes.push_back(std::move(r));
  }
  j.work = end;
  j.record.work = end;
  j.record.exclusive_s = exclusive;
  j.regime_starts.assign(1, 0.0);
  enter_regime(j, 0);
}

void enter_regime(Job& j, std::size_t regime) {
  const Job::Regime& r = j.regimes.at(regime);
  j.regime = regime;
  j.job_type = r.job_type;
  j.rate_one_node = r.rate_one_node;
  j.rate_spread = r.rate_spread;
  j.rate_best = r.rate_best;
  j.ref_rate = r.ref_rate;
}

}  // namespace fairgpu
