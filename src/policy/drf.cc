// `drf`: Dominant Resource Fairness (Ghodsi et al., "Dominant Resource
// Fairness: Fair Allocation of Multiple Resource Types", NSDI 2011, §4: the
// dominant share, the 9-CPU / 18-GB example, Algorithm 1 and progressive
// filling; and weighted DRF) across tenants, over GPUs, CPUs and memory.
//
// - A tenant's dominant share = max over r in {GPU, CPU, memory} of (its use
//   of r / the cluster's capacity of r), divided by the tenant's weight. Use
//   counts the jobs whose lease still runs and the grants made so far this
//   round; capacities are the GPU nodes' totals (GPUs of every type count as
//   one resource: DRF knows no heterogeneity, the round places each gang on
//   the type where it runs fastest among those with room).
// - Algorithm 1 at each scheduling point: take the tenant with the smallest
//   weighted dominant share that still has a decidable job (ties to the lower
//   tenant index), and grant its next job if its GPUs fit (GangRound::grant,
//   consolidated placement) and its CPUs and memory fit what is left of the
//   cluster's. Inside a tenant jobs go FIFO, but its running jobs whose lease
//   ended come before its queued ones, so a renewal keeps its devices and pays
//   no restart. Repeat until no tenant is left.
// - Where the paper is silent or does not fit:
//   - Jobs are gangs with their own demand vectors (the paper's tasks of one
//     user are alike); a grant adds the whole job's GPUs, CPUs and memory.
//   - Algorithm 1 stops at the first task that does not fit ("the cluster is
//     full"). With gangs of different sizes that would idle resources another
//     tenant's smaller job could use, so a tenant whose next job does not fit
//     is only skipped for the rest of the round: it is frozen, as in
//     progressive filling once a resource it needs saturates, and as Astraea
//     Algorithm 1 line 17 drops a tenant. Its later jobs do not jump its head
//     (FIFO inside a tenant, no backfilling).
//   - CPUs and memory are checked in aggregate against the cluster's totals,
//     not per node: packing CPU and memory onto the nodes a gang lands on is
//     Synergy's job (docs/design.md §4); GPUs are placed node by node by GangRound.
//   - Preemptive at lease granularity: at every scheduling point, running jobs
//     whose lease ended compete again with the queued ones, so shares
//     re-balance as leases end; a job not granted again is preempted. Lease
//     and interval default to TimeSharingPolicy's (900 s, 10 s).
//   - A resource the cluster does not describe (every node's cpus or
//     memory_gb 0, i.e. unknown) is left out of the shares and the fit.
//   - Jobs' own priority weights do not enter: DRF is across tenants.
//   - A job needing more CPUs or memory than the whole cluster has could never
//     start and would block its tenant forever: an InputError at the first
//     scheduling point (the other policies ignore CPUs and memory).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include "fairgpu/input_error.h"
#include "placement/gang_round.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy {
namespace {

constexpr std::size_t kGpu = 0, kCpu = 1, kMemory = 2, kResources = 3;
using Vec = std::array<double, kResources>;

Vec demand(const Job& j) {
  Vec d{};
  d[kGpu] = j.workers;
  d[kCpu] = j.cpus;
  d[kMemory] = j.memory_gb;
  return d;
}

class Drf final : public TimeSharingPolicy {
 public:
  explicit Drf(const PolicyOptions& o) : TimeSharingPolicy(o) {}
  // With no job queued every decidable job is a lease-ended running one
  // whose demand fits what it held: each is granted (its own devices).
  bool grants_all_when_none_waits() const override { return true; }

  RoundPlan plan(const SchedulerState& s) override {
    if (!checked_) check_demands(s);
    placement::GangRound round = gang_round(s);
    if (!round.worth_planning()) return {};

    const std::size_t n_tenants = s.tenants.size();
    // Use per tenant and what is left of the cluster, from the leases that
    // still run.
    std::vector<Vec> use(n_tenants, Vec{0.0, 0.0, 0.0});
    Vec left = capacity_;
    for (std::size_t i : s.running) {
      const Job& j = s.jobs[i];
      if (s.lease_ended(j)) continue;
      const Vec d = demand(j);
      for (std::size_t r = 0; r < kResources; ++r) {
        use[j.tenant][r] += d[r];
        left[r] -= d[r];
      }
    }

    // Each tenant's decidable jobs: lease-ended running ones first, then the
    // queued ones, each in arrival order (decidable() is in arrival order).
    std::vector<std::vector<std::size_t>> pending(n_tenants);
    for (std::size_t i : round.decidable())
      if (s.jobs[i].state == JobState::kRunning) pending[s.jobs[i].tenant].push_back(i);
    for (std::size_t i : round.decidable())
      if (s.jobs[i].state != JobState::kRunning) pending[s.jobs[i].tenant].push_back(i);
    std::vector<std::size_t> next(n_tenants, 0);
    std::vector<char> in_play(n_tenants, 0);
    for (std::size_t t = 0; t < n_tenants; ++t) in_play[t] = !pending[t].empty();

    const double lease_end = s.now + lease();
    while (true) {
      std::size_t p = n_tenants;
      double best = std::numeric_limits<double>::infinity();
      for (std::size_t t = 0; t < n_tenants; ++t) {
        if (!in_play[t]) continue;
        const double share = dominant_share(use[t]) / s.tenants[t].weight;
        if (p == n_tenants || share < best) p = t, best = share;
      }
      if (p == n_tenants) break;
      const std::size_t i = pending[p][next[p]];
      const Vec d = demand(s.jobs[i]);
      if (!fits(d, left) || !round.grant(i, lease_end)) {
        in_play[p] = 0;  // frozen for this round
        continue;
      }
      for (std::size_t r = 0; r < kResources; ++r) {
        use[p][r] += d[r];
        left[r] -= d[r];
      }
      if (++next[p] == pending[p].size()) in_play[p] = 0;
    }
    return round.plan();
  }

 private:
  double dominant_share(const Vec& u) const {
    double share = 0.0;
    for (std::size_t r = 0; r < kResources; ++r)
      if (capacity_[r] > 0.0) share = std::max(share, u[r] / capacity_[r]);
    return share;
  }

  // GPUs are GangRound's to check (per type); CPUs and memory in aggregate,
  // with a relative tolerance so sums of decimal demands that exactly fill
  // the cluster still fit.
  bool fits(const Vec& d, const Vec& left) const {
    for (std::size_t r : {kCpu, kMemory})
      if (capacity_[r] > 0.0 && d[r] > left[r] + 1e-9 * capacity_[r]) return false;
    return true;
  }

  void check_demands(const SchedulerState& s) {
    capacity_ = Vec{};
    capacity_[kGpu] = s.model->total_gpus;
    for (const Node& n : s.model->cluster.nodes) {
      capacity_[kCpu] += n.cpus;
      capacity_[kMemory] += n.memory_gb;
    }
    for (const Job& j : s.jobs) {
      const Vec d = demand(j);
      for (std::size_t r : {kCpu, kMemory}) {
        if (capacity_[r] > 0.0 && d[r] > capacity_[r] * (1.0 + 1e-9)) {
          const char* what = r == kCpu ? "cpus" : "memory_gb";
          throw InputError("trace", fmt::format("job {}: {}", j.record.id, what),
                           fmt::format("needs {} but the cluster's GPU nodes have {} in all: "
                                       "drf could never start it",
                                       d[r], capacity_[r]));
        }
      }
    }
    checked_ = true;
  }

  bool checked_ = false;
  Vec capacity_{0.0, 0.0, 0.0};
};

}  // namespace

std::unique_ptr<RoundPolicy> NewDrfPolicy(const PolicyOptions& options) {
  return std::make_unique<Drf>(options);
}

}  // namespace fairgpu::policy
