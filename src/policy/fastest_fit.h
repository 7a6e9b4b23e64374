// Event-cost simulation of the re-solving job-level policies (ossp, ftf:
// docs/design.md §5). Their LPs maximise, or minimise the worst of, terms
// that each grow with one job's throughput, then take the most normalised
// throughput among the optima. When every job can spend all of its time on
// its one fastest type at once, that allocation maximises every job's
// throughput together, so it is the optimum of both stages, and the only
// one of the second when each job's fastest type is unique: known without
// an LP, whatever the remaining work and elapsed times (which age). Gavel's
// priority rounds realise it as renewals in place once every job runs there.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "fairgpu/scheduler.h"

namespace fairgpu::policy {

// Each of the n jobs' fastest type among those rate(i, t) > 0 says it may
// use, or an empty vector when some job has none, or two at its fastest
// rate, or the jobs fastest on a type need more than its capacity.
template <class Workers, class Rate>
std::vector<std::size_t> fastest_types_if_all_fit(std::size_t n,
                                                  const std::vector<double>& capacity,
                                                  Workers workers, Rate rate) {
  const std::size_t k = capacity.size();
  std::vector<std::size_t> best(n, k);
  std::vector<double> need(k, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    double top = 0.0;
    bool tie = false;
    for (std::size_t t = 0; t < k; ++t) {
      const double r = rate(i, t);
      if (!(r > 0.0)) continue;
      if (r > top) {
        top = r, best[i] = t, tie = false;
      } else if (r == top) {
        tie = true;
      }
    }
    if (best[i] == k || tie) return {};
    need[best[i]] += workers(i);
  }
  for (std::size_t t = 0; t < k; ++t)
    if (need[t] > capacity[t]) return {};
  return best;
}

// Whether `plan`, at a point where every running job's lease ended, renews
// each of them on its own devices to s.now + round_s and starts nothing: the
// executor's plain renewal (RoundPolicy::stability's).
inline bool renews_every_running_in_place(const SchedulerState& s, const RoundPlan& plan,
                                          double round_s) {
  if (plan.run.size() != s.running.size()) return false;
  for (std::size_t i : s.running)
    if (!s.lease_ended(s.jobs[i])) return false;
  for (const Assignment& a : plan.run) {
    const Job& j = s.jobs[a.job];
    if (j.state != JobState::kRunning || a.devices != j.devices || !a.resources.empty() ||
        !std::isnan(a.rate_multiplier) || a.finish_at_lease_end ||
        a.lease_end != s.now + round_s)
      return false;
  }
  return true;
}

}  // namespace fairgpu::policy
