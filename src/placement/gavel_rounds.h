// Gavel's round-based mechanism (Narayanan et al., OSDI 2020, §5): a job-level
// allocation of time fractions is realised round by round by priorities.
#pragma once

#include <vector>

#include "fairgpu/scheduler.h"
#include "fairgpu/share_problem.h"

namespace fairgpu::placement {

// x: one row per job in `jobs`, devices per type (time fraction x / workers).
// priority(j, t) = fraction allocated / fraction of time received on t since
// arrival (infinite while nothing received); pairs are taken highest first,
// a job at most once, when its whole gang fits in the type's free devices.
// Chosen jobs keep their devices when they stay on the same type (no restart);
// the rest are placed more workers first, consolidated. Then backfilling:
// GPUs still free go to the jobs left out, highest priority first (jobs with
// no allocation last, earliest arrival first), renewed in place when they
// can be, else on any types they run on (mixed types run at the slowest), so
// no GPU idles while a job that fits waits.
//
// With spread_min > 0, placement follows rates (as the OEF placer): a gang
// chosen for a type where it would run spread below spread_min of its
// one-node rate there, while a node of the type could hold it, is not
// started (nor backfilled so) until it has waited spread_wait_s since it last
// stopped; a renewed gang running spread so moves onto one node of its type
// when one is free; backfills rank types by the rate the gang gets now.
struct GavelRoundOptions {
  double spread_min = 0.0;  // 0: Gavel's placement (any that fits)
  double spread_wait_s = 0.0;
};
std::vector<Assignment> gavel_priority_round(const SchedulerState& state,
                                             const std::vector<std::size_t>& jobs, const Matrix& x,
                                             double lease_end,
                                             const GavelRoundOptions& options = {});

}  // namespace fairgpu::placement
