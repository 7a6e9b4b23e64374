// OEF's rounding placer (OEF §4.3, DESIGN §4): turns a tenant-level
// fractional allocation into whole GPUs every round so that each entity's
// long-run share approaches its ideal one.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "fairgpu/scheduler.h"

namespace fairgpu::placement {

struct RoundingEntity {
  std::uint64_t key = 0;             // stable across rounds: (tenant, job type)
  std::vector<double> ideal;         // devices per type (the fair share)
  std::vector<std::size_t> jobs;     // its active jobs (indices into state.jobs)
};

class OefRoundingPlacer {
 public:
  // One round: every entity's integral GPUs per type, its jobs chosen
  // round-robin (longest starvation first) and placed, leftovers handed out
  // (work conservation), deviations updated with what each entity got.
  std::vector<Assignment> place(const SchedulerState& state,
                                const std::vector<RoundingEntity>& entities, double lease_end);

 private:
  std::map<std::uint64_t, std::vector<double>> dev_;
};

// Orders jobs for round-robin inside a tenant (OEF §6.1.3): longest
// starvation first; running jobs come after waiting ones, the longest-running
// first to yield. Ties by job index.
void order_by_starvation(const SchedulerState& state, std::vector<std::size_t>& jobs);

// Places one job on `counts` devices per type (summing to its gang size),
// consolidated within each type; the devices are taken from `free`.
std::vector<DeviceRef> place_on_counts(class FreeDevices& free, const std::vector<int>& counts);

}  // namespace fairgpu::placement
