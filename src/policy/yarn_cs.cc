// `yarn-cs`: the YARN capacity scheduler as DLT clusters run it (Vavilapalli
// et al., SoCC 2013; the "YARN-CS" baseline of Astraea §6.1.5 and of
// Tiresias/HiveD): each tenant owns a static quota of the cluster's GPUs in
// proportion to its weight (Astraea eq. 6, Quota_j = M·W_j / Σ W_k), jobs run
// first in, first out inside their tenant, and a tenant never borrows idle
// quota of others.
//
// Non-preemptive: a started job keeps its GPUs to the end. A tenant's head
// job starts when its gang fits both the tenant's unused quota and the free
// GPUs; until then it blocks the tenant's later jobs (FIFO queue).
// Where the papers are silent: the quota counts GPUs of every type together
// (a heterogeneous VC), and a tenant with nothing running may start a job
// larger than its quota — operators size queues to hold their largest job;
// without this rule such a job would wait forever.
#include <vector>

#include "placement/gang_round.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy {
namespace {

class YarnCs final : public TimeSharingPolicy {
 public:
  explicit YarnCs(const PolicyOptions& o) : TimeSharingPolicy(o) {}

  bool renews_first() const override { return true; }

  RoundPlan plan(const SchedulerState& s) override {
    placement::GangRound round = gang_round(s);
    if (!round.worth_planning()) return {};
    const std::size_t n_tenants = s.tenants.size();
    double total_weight = 0.0;
    for (const auto& t : s.tenants) total_weight += t.weight;

    const double lease_end = s.now + lease();
    round.renew_all(lease_end);
    std::vector<double> used(n_tenants, 0.0);
    for (std::size_t i : s.running) used[s.jobs[i].tenant] += s.jobs[i].workers;
    std::vector<char> blocked(n_tenants, 0);
    for (std::size_t i : round.decidable()) {
      const Job& j = s.jobs[i];
      if (round.granted(i) || blocked[j.tenant]) continue;
      const double quota = s.model->total_gpus * s.tenants[j.tenant].weight / total_weight;
      const bool within = used[j.tenant] + j.workers <= quota + 1e-9 || used[j.tenant] == 0.0;
      if (within && round.grant(i, lease_end)) {
        used[j.tenant] += j.workers;
      } else {
        blocked[j.tenant] = 1;
      }
    }
    return round.plan();
  }
};

}  // namespace

std::unique_ptr<RoundPolicy> NewYarnCsPolicy(const PolicyOptions& options) {
  return std::make_unique<YarnCs>(options);
}

}  // namespace fairgpu::policy
