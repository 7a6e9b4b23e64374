// `themis`: finish-time fairness (Mahajan et al., Themis, NSDI 2020), as the
// Astraea (§4.1.2, §6.1.5) and Shockwave (§2, eq. 9) papers describe it.
//
// ρ_i = T_shared / T_ideal. T_ideal = the job's isolated run time (alone on
// the cluster's capacity-weighted average GPU, JobRecord::exclusive_s) × the
// average contention N_avg since it arrived (Shockwave eq. 9: the time average
// of max(1, GPUs demanded by active jobs / M)). T_shared = the time since
// arrival plus the remaining work at the rate the job has had so far (its
// share of the cluster up to now: iterations done / time since arrival);
// a job that has had nothing yet has ρ = ∞.
//
// Each scheduling point, over the jobs whose lease has ended or that wait:
// 1. the fraction f (key filter, alias --themis-filter, default 0.8) of active jobs with the
//    worst ρ are eligible (Themis's fairness knob: 1 - f of the jobs, the
//    best off, sit the lease out);
// 2. GPUs go to eligible jobs where they add the most normalised throughput
//    (speedup of the type over the job's slowest type, OEF §6.1.4): the
//    (job, type) pair with the highest speedup whose gang fits is granted
//    first, ties to the worse ρ — Themis's auction picks the allocation of
//    highest total valuation, and with per-GPU valuations that is this greedy;
// 3. GPUs left over go to the other jobs, worst ρ first (work conservation,
//    Themis's leftover allocation).
// Leases: 900 s, a scheduling point every 10 s (Astraea's evaluation setup,
// which compares against Themis under the same lease scheme).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "placement/gang_round.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy {
namespace {

class Themis final : public TimeSharingPolicy {
 public:
  explicit Themis(const PolicyOptions& o) : TimeSharingPolicy(o), filter_(o.number("filter")) {}

  // With no job queued every decidable job is granted: an eligible one on
  // its pairs by speedup (the first that fits), the others anywhere. A
  // running job on one node of the first type of its best speedup tries its
  // own type first, so it keeps its devices (no start can take them): then
  // the plan is the renewals, and rho (which ages) only reorders them.
  Stability stability(const SchedulerState& s) const override {
    if (none_waits_unspread(s)) {
      bool best = true;
      for (std::size_t i : s.running) {
        const Job& j = s.jobs[i];
        std::size_t first = j.rate_best.size();
        for (std::size_t t = 0; t < j.rate_best.size(); ++t)
          if (j.runs_on(t) && (first == j.rate_best.size() ||
                               j.rate_best[t] / j.ref_rate > j.rate_best[first] / j.ref_rate))
            first = t;
        best &= first == j.placement_type;
      }
      if (best) return {std::numeric_limits<double>::infinity(), lease(), kUnset};
    }
    return TimeSharingPolicy::stability(s);
  }

  RoundPlan plan(const SchedulerState& s) override {
    placement::GangRound round = gang_round(s);
    if (!round.worth_planning()) return {};

    // ρ of every active job, worst first; the top ⌈f·n⌉ are eligible.
    std::vector<std::pair<double, std::size_t>> by_rho;
    by_rho.reserve(s.active.size());
    for (std::size_t i : s.active) by_rho.emplace_back(rho(s, s.jobs[i]), i);
    std::stable_sort(by_rho.begin(), by_rho.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    const auto n_eligible =
        static_cast<std::size_t>(std::ceil(filter_ * static_cast<double>(by_rho.size()) - 1e-9));
    std::vector<char> decidable(s.jobs.size(), 0);
    for (std::size_t i : round.decidable()) decidable[i] = 1;

    std::vector<std::size_t> eligible, others;  // decidable, worst ρ first
    for (std::size_t r = 0; r < by_rho.size(); ++r) {
      const std::size_t i = by_rho[r].second;
      if (!decidable[i]) continue;
      (r < n_eligible ? eligible : others).push_back(i);
    }

    const double lease_end = s.now + lease();
    const std::size_t k = s.model->cluster.num_types();
    // 2. Highest normalised throughput per GPU first among the eligible.
    // Grants only shrink the free counts, so a pair that does not fit now
    // never fits later: one pass over the pairs sorted by speedup (ties to
    // the worse ρ) is the repeated "best pair that fits".
    struct Pair {
      double speedup;
      std::size_t rank, type;
    };
    std::vector<Pair> pairs;
    for (std::size_t e = 0; e < eligible.size(); ++e) {
      const Job& j = s.jobs[eligible[e]];
      for (std::size_t t = 0; t < k; ++t)
        if (j.runs_on(t)) pairs.push_back({j.rate_best[t] / j.ref_rate, e, t});
    }
    std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) {
      if (a.speedup != b.speedup) return a.speedup > b.speedup;
      return a.rank < b.rank;
    });
    for (const Pair& p : pairs) {
      const std::size_t i = eligible[p.rank];
      // On its current type a running job keeps its devices (GangRound).
      if (!round.granted(i)) round.grant(i, lease_end, p.type);
    }
    // A gang too big for any one type may still span types.
    for (std::size_t i : eligible)
      if (!round.granted(i)) round.grant(i, lease_end);
    // 3. Leftovers to the others, worst ρ first.
    for (std::size_t i : others) round.grant(i, lease_end);
    return round.plan();
  }

 private:
  static double rho(const SchedulerState& s, const Job& j) {
    const double elapsed = s.now - j.arrival;
    const double done = done_now(s, j);
    if (elapsed <= 0.0 || done <= 0.0) return std::numeric_limits<double>::infinity();
    const double contention =
        std::max(1.0, (s.contention_integral - j.contention_mark) / elapsed);
    const double shared = elapsed + (j.work - done) / (done / elapsed);
    return shared / (j.record.exclusive_s * contention);
  }

  double filter_;
};

}  // namespace

std::vector<OptionSpec> ThemisKeys() {
  auto keys = time_sharing_keys();
  keys.push_back(number_option("filter", 0.8,
                               "fraction of jobs, worst finish-time fairness first, that bid",
                               0.0, 1.0, true));
  return keys;
}

std::unique_ptr<RoundPolicy> NewThemisPolicy(const PolicyOptions& options) {
  return std::make_unique<Themis>(options);
}

}  // namespace fairgpu::policy
