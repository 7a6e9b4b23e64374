// Work-conserving rounds (docs/design.md §4, "Mid-round starts"): GPUs that
// free up inside a round (a completion, a failure) or that an arrival could
// use go at once to the waiting jobs the policy would pick next, under a
// lease that ends at the round's end. The round's plan is not re-solved: the
// policy goes through its waiting jobs in the order the plan left them, and
// this places each on what is free now.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "fairgpu/scheduler.h"

namespace fairgpu::placement {

struct MidroundCandidate {
  std::size_t job = 0;
  // GPU types its share includes (bit t): tried first. 0: none preferred.
  std::uint64_t preferred_types = 0;
};

// The free devices of one mid-round decision, taken job by job.
class MidroundPlacer {
 public:
  // `free`: devices with owner -1 in the state (others are ignored).
  MidroundPlacer(const SchedulerState& state, const std::vector<DeviceRef>& free);
  std::size_t free_left() const { return left_; }
  // A start for `c` (a kQueued job) on one node of a type it runs on: a
  // preferred type first, then the fastest one-node rate, then the node with
  // the fewest free GPUs that holds it (best fit), its lowest free ids.
  // Empty when it fits nowhere.
  std::optional<Assignment> place(const MidroundCandidate& c, double round_end);
  // A start for a gang `c` that fits on no single node, spread over nodes of
  // one type at its spread rate (a preferred type first, then the fastest
  // spread rate), else over adjacent types at the slowest one's; the nodes
  // with the most free GPUs first (fewest nodes). `min_rate`: no placement
  // whose rate is below it. Empty when none has room.
  std::optional<Assignment> place_spread(const MidroundCandidate& c, double round_end,
                                         double min_rate);

 private:
  const SchedulerState& s_;
  // The free devices by node, lowest ids first (one sorted array: this runs
  // at every completion of a big simulation), and each node's part of it
  // not taken yet.
  std::vector<DeviceRef> free_;
  struct NodeFree {
    std::uint32_t node;
    std::size_t begin, end;
  };
  std::vector<NodeFree> nodes_;
  std::vector<std::size_t> left_by_type_;
  std::size_t left_ = 0;
};

// Every device with no owner (for callers without a list of their own).
std::vector<DeviceRef> unowned_devices(const SchedulerState& state);

}  // namespace fairgpu::placement
