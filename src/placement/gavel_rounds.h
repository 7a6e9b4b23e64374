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
std::vector<Assignment> gavel_priority_round(const SchedulerState& state,
                                             const std::vector<std::size_t>& jobs,
                                             const Matrix& x, double lease_end);

}  // namespace fairgpu::placement
