// A gang's rates on every GPU type (src/core/state.cc), shared by add_job and
// the per-regime rates of dynamic adaptation.
#pragma once

#include <vector>

#include "fairgpu/scheduler.h"

namespace fairgpu {

// A gang's rates on every GPU type from one profile entry, in the profile's
// iterations/s times `units_per_iteration` (1, or epochs per iteration for a
// regime): on one node, spread over nodes, the one its gang gets (spread only
// where no node is large enough), the reference (first type it runs on), and
// the capacity-weighted mean of `best` (the isolated run time's divisor).
struct GangRates {
  std::vector<double> one_node, spread, best;
  double ref = 0.0, capacity_mean = 0.0;
};
GangRates gang_rates(const ClusterModel& model, const JobTypeProfile& profile, int workers,
                     double units_per_iteration);

}  // namespace fairgpu
