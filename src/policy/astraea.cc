// `astraea`: Long-Term GPU-time Fairness (Ye et al., Astraea, TPDS 2022).
//
// §4.2 defines LTGF; §5.1 leases; §5.2 the two-phase scheduler:
// - Tenant level (eq. 6-12): ρ_tenant = Alloc / FairShare over [t_begin, now],
//   Alloc = the tenant's GPU-seconds held (eq. 10-11), FairShare = ∫ FairShare_j(t)
//   dt with FairShare_j = Quota_j = M·W_j / Σ_k W_k (eq. 16, the evaluation's
//   choice and the default) or min(Demand_j(t), Quota_j) (eq. 8,
//   --astraea-fair-share demand). t_begin is the first scheduling point.
// - Job in tenant (eq. 13-15): FairShare_ij(t) = FairShare_j(t)·W_ij / Σ active
//   W_ij of the tenant, capped at the job's GPU demand; ρ_job = attained / fair
//   GPU-seconds since arrival.
// - Algorithm 1 at each scheduling point: every decidable job counts as
//   pending and every decidable GPU as free (§5.1.2). Phase 1 takes the
//   tenant with the smallest ρ_tenant; phase 2 its job by Algorithm 2
//   (smallest ρ_job), newly submitted jobs (never run) first (§6.1.1); if the
//   job fits (consolidated placement) it gets a lease and the tenant's Alloc
//   grows by r·t_lease as if it ran for the lease (lines 14-15); otherwise the
//   tenant is dropped for this round (line 17). Repeats until no tenant is
//   left.
// - Leases: 900 s terms, a scheduling point every 10 s (§6.1.3). A selected
//   running job is renewed on its devices; one not selected is preempted at
//   its lease end; jobs finishing inside a lease release at once (executor).
//
// Where the paper is silent: the fair-share integrals advance between
// scheduling points with the shares in force at the previous point (arrivals
// and finishes inside a 10 s interval count from the next point); ties go to
// the lower tenant index and, among jobs, to the earlier arrival.
#include <cmath>
#include <limits>
#include <vector>

#include "placement/gang_round.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy {
namespace {

class Astraea final : public TimeSharingPolicy {
 public:
  explicit Astraea(const PolicyOptions& o)
      : TimeSharingPolicy(o), demand_capped_(o.choice("fair-share") == "demand") {}

  // With none queued every decidable job is a running one whose lease
  // ended, and each is granted on its own devices (no start takes them),
  // whatever the ρ order. The fair-share integrals are linear in time
  // between events (Integral), so a point skipped changes none of their
  // bits: stable as TimeSharingPolicy says.
  bool grants_all_when_none_waits() const override { return true; }

  RoundPlan plan(const SchedulerState& s) override {
    advance_fair_shares(s);
    placement::GangRound round = gang_round(s);
    if (!round.worth_planning()) return {};

    const std::size_t n_tenants = s.tenants.size();
    // Alloc_j up to now (eq. 11): finished jobs' GPU-seconds plus the active ones'.
    std::vector<double> alloc = finished_alloc_;
    for (std::size_t i : s.active) alloc[s.jobs[i].tenant] += attained_now(s, s.jobs[i]);

    // Each tenant's decidable jobs in Algorithm 2's order: never run first
    // (by arrival), then by ρ_job ascending.
    std::vector<std::vector<std::size_t>> pending(n_tenants);
    for (std::size_t i : round.decidable()) pending[s.jobs[i].tenant].push_back(i);
    std::vector<std::size_t> next(n_tenants, 0);
    for (auto& list : pending) {
      std::stable_sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) {
        const bool na = std::isnan(s.jobs[a].record.first_start);
        const bool nb = std::isnan(s.jobs[b].record.first_start);
        if (na != nb) return na;
        if (na) return false;  // both new: arrival order (stable)
        return rho_job(s, a) < rho_job(s, b);
      });
    }

    std::vector<char> in_play(n_tenants, 0);
    for (std::size_t t = 0; t < n_tenants; ++t) in_play[t] = !pending[t].empty();
    const double lease_end = s.now + lease();
    while (true) {
      // Phase 1: the tenant with the smallest ρ_tenant (eq. 12).
      std::size_t p = n_tenants;
      double best = std::numeric_limits<double>::infinity();
      for (std::size_t t = 0; t < n_tenants; ++t) {
        if (!in_play[t]) continue;
        const double rho = ratio(alloc[t], tenant_fair_[t].at(s.now));
        if (p == n_tenants || rho < best) p = t, best = rho;
      }
      if (p == n_tenants) break;
      // Phase 2: its most deprived job (Algorithm 2).
      const std::size_t i = pending[p][next[p]];
      if (!round.grant(i, lease_end)) {
        in_play[p] = 0;  // line 17: go on with the other tenants
        continue;
      }
      alloc[p] += s.jobs[i].workers * lease();  // line 14
      if (++next[p] == pending[p].size()) in_play[p] = 0;
    }
    return round.plan();
  }

 private:
  static double ratio(double attained, double fair) {
    if (fair > 0.0) return attained / fair;
    return attained > 0.0 ? std::numeric_limits<double>::infinity() : 0.0;
  }
  double rho_job(const SchedulerState& s, std::size_t i) const {
    return ratio(attained_now(s, s.jobs[i]), job_fair_[i].at(s.now));
  }

  // ∫ share dt since t_begin: linear between the points where the share
  // changes (an arrival or a finish changes the active set), so its value
  // at a point does not depend on how many points came before it (the
  // simulator may skip the stable ones, RoundPolicy::stability).
  struct Integral {
    double base = 0.0, rate = 0.0, since = 0.0;
    double at(double t) const { return base + rate * (t - since); }
    void set_rate(double r, double t) {
      if (r == rate) return;
      base = at(t);
      rate = r;
      since = t;
    }
  };

  // Starts the tenant (eq. 9) and job (eq. 14) fair-share integrals' shares
  // in force from now to the next point (those of the active set now), and
  // collects the GPU-seconds of jobs that finished since the previous one.
  void advance_fair_shares(const SchedulerState& s) {
    const std::size_t n_tenants = s.tenants.size();
    if (tenant_fair_.empty()) {
      tenant_fair_.assign(n_tenants, {});
      finished_alloc_.assign(n_tenants, 0.0);
      job_fair_.assign(s.jobs.size(), {});
      double total_weight = 0.0;
      for (const auto& t : s.tenants) total_weight += t.weight;
      quota_.resize(n_tenants);
      for (std::size_t t = 0; t < n_tenants; ++t)
        quota_[t] = s.model->total_gpus * s.tenants[t].weight / total_weight;  // eq. 6
      for (Integral& f : tenant_fair_) f.since = s.now;  // t_begin
    }
    if (job_fair_.size() < s.jobs.size()) job_fair_.resize(s.jobs.size());  // jobs added live
    // Jobs finished since: those active then, and those that arrived and
    // finished in between (shorter than an interval).
    auto collect = [&](std::size_t i) {
      if (s.jobs[i].state == JobState::kFinished)
        finished_alloc_[s.jobs[i].tenant] += s.jobs[i].record.attained_gpu_seconds;
    };
    for (std::size_t i : prev_active_) collect(i);
    for (; arrived_ < s.jobs.size() && s.jobs[arrived_].state != JobState::kFuture; ++arrived_)
      collect(arrived_);  // never in prev_active_: it arrived after that point
    prev_active_ = s.active;
    // The shares until the next point (arrivals and finishes inside an
    // interval count from the next point).
    std::vector<double> demand(n_tenants, 0.0), weight(n_tenants, 0.0);
    for (std::size_t i : s.active) {
      demand[s.jobs[i].tenant] += s.jobs[i].workers;  // eq. 7
      weight[s.jobs[i].tenant] += s.jobs[i].weight;
    }
    std::vector<double> share(n_tenants);
    for (std::size_t t = 0; t < n_tenants; ++t) {
      share[t] = demand_capped_ ? std::min(demand[t], quota_[t]) : quota_[t];  // eq. 8 / 16
      tenant_fair_[t].set_rate(share[t], s.now);
    }
    for (std::size_t i : s.active) {  // eq. 13-14
      const Job& j = s.jobs[i];
      job_fair_[i].set_rate(
          std::min<double>(j.workers, share[j.tenant] * j.weight / weight[j.tenant]), s.now);
    }
    // A job no longer active keeps its rate: nothing reads it again.
  }

  bool demand_capped_;
  std::size_t arrived_ = 0;  // jobs join the state in index order
  std::vector<double> quota_, finished_alloc_;
  std::vector<Integral> tenant_fair_, job_fair_;
  std::vector<std::size_t> prev_active_;
};

}  // namespace

std::vector<OptionSpec> AstraeaKeys() {
  auto keys = time_sharing_keys();
  keys.push_back(choice_option("fair-share", "quota",
                               "tenant fair share: quota (eq. 16) or demand (eq. 8)",
                               {"quota", "demand"}));
  return keys;
}

std::unique_ptr<RoundPolicy> NewAstraeaPolicy(const PolicyOptions& options) {
  return std::make_unique<Astraea>(options);
}

}  // namespace fairgpu::policy
