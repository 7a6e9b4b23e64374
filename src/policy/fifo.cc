// `fifo` and `fifo-backfill`: first in, first out, the default of Slurm and of
// Venus before Astraea (Astraea §3.2), and the baseline every DLT scheduler
// paper starts from.
//
// Non-preemptive: a started job keeps its GPUs to the end (its lease is
// renewed at every lease end). fifo starts jobs strictly in arrival order and
// stops at the first that does not fit (head-of-line blocking, no
// backfilling). fifo-backfill goes on down the queue and starts any later job
// that fits the GPUs left (first fit; no reservation for the head, since jobs
// give no run-time estimates). Placement: consolidated, on the type where the
// gang runs fastest among those with room.
#include "placement/gang_round.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy {
namespace {

class Fifo final : public TimeSharingPolicy {
 public:
  Fifo(const PolicyOptions& o, bool backfill) : TimeSharingPolicy(o), backfill_(backfill) {}

  bool renews_first() const override { return true; }

  RoundPlan plan(const SchedulerState& s) override {
    placement::GangRound round = gang_round(s);
    if (!round.worth_planning()) return {};
    const double lease_end = s.now + lease();
    round.renew_all(lease_end);
    for (std::size_t i : round.decidable()) {
      if (round.granted(i)) continue;
      if (round.grant(i, lease_end)) continue;
      if (!backfill_) break;
    }
    return round.plan();
  }

 private:
  bool backfill_;
};

}  // namespace

std::unique_ptr<RoundPolicy> NewFifoPolicy(const PolicyOptions& options, bool backfill) {
  return std::make_unique<Fifo>(options, backfill);
}

}  // namespace fairgpu::policy
