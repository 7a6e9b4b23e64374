// The fractional shares behind a share round policy's last plan (tests and
// diagnostics): what the rows were given, and what they can use.
#pragma once

#include <string>
#include <vector>

#include "fairgpu/scheduler.h"

namespace fairgpu::policy {

// One LP row: tenant level, one per (tenant, job type, gang); job level, one
// per group of interchangeable jobs.
struct PlannedShare {
  std::string row;              // "alice/resnet50 x4" at tenant level
  std::vector<double> gpus;     // fractional GPUs per type (the model's order)
  std::vector<double> speedup;  // throughput per GPU of each type, in type-0 GPU units
  double usable = 0.0;          // GPUs the row's active jobs can use
};

// The rows and shares of `policy`'s last plan() when it is a share round
// policy (make_round_policy of oef-*, gavel, gandiva-fair:mechanism=trading,
// max-min, max-sum-throughput); empty otherwise.
std::vector<PlannedShare> planned_shares(const RoundPolicy& policy);

}  // namespace fairgpu::policy
