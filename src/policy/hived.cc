// `hived`: HiveD's quota with borrowing (Zhao et al., OSDI 2020; the "HiveD"
// baseline of Astraea §6.1.5: "a dynamic quota ... allowing users to submit
// spot jobs to other VCs with lower utilization").
//
// Each tenant owns a quota of GPUs ∝ its weight (its virtual cluster).
// - Guaranteed jobs run inside the quota, first in, first out per tenant,
//   and are never preempted.
// - When GPUs sit idle, jobs beyond their tenant's quota may borrow them as
//   preemptible (opportunistic) jobs, first in, first out over all tenants.
// - When a tenant needs its quota back, borrowed jobs are preempted: at every
//   scheduling point guaranteed jobs are granted first, and a borrowed job is
//   renewed only if GPUs are left for it. Borrowed jobs therefore hold
//   leases one scheduling interval long (renewal costs nothing), so a reclaim
//   waits at most one interval, as HiveD's immediate preemption of
//   opportunistic jobs; guaranteed jobs hold the normal lease.
// - A running borrowed job becomes guaranteed when its tenant has quota room
//   for it (it keeps its devices).
// Where the paper is silent: HiveD's cells keep GPU types apart; here the
// quota counts GPUs of every type together, like yarn-cs, and a tenant with
// nothing guaranteed may run one job larger than its quota as guaranteed.
#include <limits>
#include <vector>

#include "placement/gang_round.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy {
namespace {

class Hived final : public TimeSharingPolicy {
 public:
  explicit Hived(const PolicyOptions& o) : TimeSharingPolicy(o) {}

  // With no job queued, no gang spread and no running job borrowed, every
  // decidable job is a guaranteed running one whose lease ended: plan()
  // renews each on its own devices to now + lease() (no start takes them,
  // and a renewal needs no quota room) and changes nothing of its own
  // (borrowed_ stays), at every point until an event. A borrowed job, if
  // any, may turn guaranteed or lose its GPUs: plan every point then.
  Stability stability(const SchedulerState& s) const override {
    if (none_waits_unspread(s)) {
      bool borrowing = false;
      for (std::size_t i : s.running) borrowing |= i < borrowed_.size() && borrowed_[i];
      if (!borrowing) return {std::numeric_limits<double>::infinity(), lease(), kUnset};
    }
    return TimeSharingPolicy::stability(s);
  }

  RoundPlan plan(const SchedulerState& s) override {
    placement::GangRound round = gang_round(s);
    if (!round.worth_planning()) return {};
    if (borrowed_.size() < s.jobs.size()) borrowed_.resize(s.jobs.size(), 0);
    const std::size_t n_tenants = s.tenants.size();
    double total_weight = 0.0;
    for (const auto& t : s.tenants) total_weight += t.weight;
    auto quota = [&](std::size_t t) {
      return s.model->total_gpus * s.tenants[t].weight / total_weight;
    };

    // Guaranteed use: running guaranteed jobs (their leases are renewed).
    const double lease_end = s.now + lease();
    std::vector<double> used(n_tenants, 0.0);
    for (std::size_t i : s.running) {
      const Job& j = s.jobs[i];
      if (borrowed_[i]) continue;
      used[j.tenant] += j.workers;
      if (s.lease_ended(j)) round.grant(i, lease_end);
    }
    // Guaranteed starts, FIFO per tenant: borrowed running jobs first (they
    // keep their devices), then the queue.
    std::vector<char> blocked(n_tenants, 0);
    auto guarantee = [&](std::size_t i) {
      const Job& j = s.jobs[i];
      if (blocked[j.tenant]) return;
      const bool within = used[j.tenant] + j.workers <= quota(j.tenant) + 1e-9 || used[j.tenant] == 0.0;
      if (within && round.grant(i, lease_end)) {
        used[j.tenant] += j.workers;
        borrowed_[i] = 0;
      } else {
        blocked[j.tenant] = 1;
      }
    };
    for (std::size_t i : round.decidable())
      if (borrowed_[i] && s.jobs[i].state == JobState::kRunning) guarantee(i);
    for (std::size_t i : round.decidable())
      if (s.jobs[i].state == JobState::kQueued) guarantee(i);
    // Borrowing: what is left goes to the rest, FIFO over all tenants.
    const double borrow_end = s.now + interval();
    // Running borrowed jobs first: a borrower is never preempted for another.
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t i : round.decidable()) {
        const bool running = s.jobs[i].state == JobState::kRunning;
        if (round.granted(i) || running != (pass == 0)) continue;
        if (round.grant(i, borrow_end)) borrowed_[i] = 1;
      }
    return round.plan();
  }

 private:
  std::vector<char> borrowed_;  // by job: running on borrowed GPUs
};

}  // namespace

std::unique_ptr<RoundPolicy> NewHivedPolicy(const PolicyOptions& options) {
  return std::make_unique<Hived>(options);
}

}  // namespace fairgpu::policy
