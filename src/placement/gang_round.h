// One scheduling point of a time-sharing policy (docs/design.md §4): the policy grants
// leases job by job in its own priority order, all of a job's workers or none,
// and the round places them consolidated (as few nodes as possible).
//
// Selection runs on free-GPU counts per type, as Astraea §5.1.2 does: every
// decidable job counts as pending and every decidable device as free. plan()
// then places: renewed jobs keep their devices (no restart), except a gang
// spread over nodes that now fits on one node of its type, which moves there;
// started jobs are picked best-fit from what is left on the type they were
// granted, more workers first. Because the counts per type match, every grant
// is placeable.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <vector>

#include "fairgpu/scheduler.h"
#include "placement/devices.h"

namespace fairgpu::placement {

// Placement that follows rates (issue 28, as the OEF placer and Gavel's
// rounds): a gang whose grant would run spread over nodes below spread_min
// of its one-node rate on that type is not granted (it waits, keeping its
// place in the policy's order) until it has waited spread_wait_s since it
// last stopped; a running gang is never moved onto such a placement.
struct GangRoundOptions {
  double spread_min = 0.0;  // 0: any placement that fits
  double spread_wait_s = 0.0;
};

class GangRound {
 public:
  static constexpr std::size_t kBestType = std::numeric_limits<std::size_t>::max();

  explicit GangRound(const SchedulerState& state, GangRoundOptions options = {});

  // Jobs the policy decides about now, in arrival order: queued jobs and
  // running jobs whose lease has ended (renew or preempt).
  const std::vector<std::size_t>& decidable() const { return decidable_; }
  // Something to decide: a lease ended, or a queued job and a free GPU.
  bool worth_planning() const;

  int free_of_type(std::size_t type) const { return free_[type]; }
  int total_free() const;
  bool granted(std::size_t job) const;

  // The type a grant would use, or kBestType when the gang fits nowhere:
  // for a running job its current devices when they are still free; else
  // `type` if given and it has room; else the type where the gang runs
  // fastest among those with room, at the rate it gets there (one node if a
  // node of the type has room now, else spread; ties to the slower, cheaper
  // type).
  // A gang larger than any single type's free GPUs but within their sum
  // spans types (straggler rate) only when no type could ever hold it.
  // False too for a gang that holds out for a better placement (above).
  bool fits(std::size_t job, std::size_t type = kBestType) const;
  // Whether `job` on `type` holds out for one node (GangRoundOptions).
  bool holds_out(std::size_t job, std::size_t type) const {
    return holds_out(s_.jobs[job], type);
  }
  // Grants `job` a lease to `lease_end`; false (nothing taken) if it does
  // not fit.
  bool grant(std::size_t job, double lease_end, std::size_t type = kBestType);
  // Renews every running job whose lease ended on its own devices (the
  // non-preemptive policies call this first).
  void renew_all(double lease_end);

  // The plan: renewals first, then starts in grant order.
  RoundPlan plan() const;

 private:
  struct Grant {
    std::size_t job;
    double lease_end;
    bool keep;                      // renewal on its own devices
    std::vector<int> per_type;      // GPUs taken per type
  };
  bool choose(std::size_t job, std::size_t type, Grant* out) const;
  bool holds_out(const Job& j, std::size_t type) const;
  // Free devices node by node, for the rate a gang gets (made lazily: only
  // gangs need it).
  FreeDevices& free_devices() const;
  void take_devices(const Grant& g) const;
  mutable std::optional<FreeDevices> devices_;

  const SchedulerState& s_;
  GangRoundOptions options_;
  std::vector<std::size_t> decidable_;
  std::vector<int> free_;  // per type
  std::vector<Grant> grants_;
  std::vector<char> granted_;  // by job index, sized lazily
  bool lease_ended_ = false;
  int queued_ = 0;
};

}  // namespace fairgpu::placement
