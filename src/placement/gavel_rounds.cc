// Gavel's priority rounds. Choices where Gavel's paper is terse, following its
// simulator: a job runs on one GPU type per round (its gang must fit there);
// "fraction received" is seconds run on the type over seconds since arrival;
// ties go to the larger allocation, then the earlier job. Gavel leaves GPUs
// idle when the chosen pairs do not fill them; here the jobs left out
// backfill them (a backfilled job is an ordinary start: the next round's
// priorities decide again).
#include "placement/gavel_rounds.h"

#include <algorithm>
#include <limits>

#include "placement/devices.h"
#include "placement/oef_rounding.h"

namespace fairgpu::placement {

std::vector<Assignment> gavel_priority_round(const SchedulerState& s,
                                             const std::vector<std::size_t>& jobs,
                                             const Matrix& x, double lease_end) {
  const std::size_t k = s.model->cluster.num_types();
  FreeDevices free(s);
  struct Pair {
    double priority, fraction;
    std::size_t row, type;
  };
  std::vector<Pair> pairs;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (std::size_t r = 0; r < jobs.size(); ++r) {
    const Job& j = s.jobs[jobs[r]];
    const double age = s.now - j.arrival;
    for (std::size_t t = 0; t < k; ++t) {
      double f = x(r, t) / j.workers;
      if (f < 1e-6 || !j.runs_on(t)) continue;
      double received = age > 0.0 ? j.time_on_type[t] / age : 0.0;
      pairs.push_back({received > 0.0 ? f / received : kInf, f, r, t});
    }
  }
  std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.fraction != b.fraction) return a.fraction > b.fraction;
    return a.row < b.row;
  });

  // Choose (job, type) by priority against free counts.
  std::vector<int> left(k);
  for (std::size_t t = 0; t < k; ++t) left[t] = free.free_of_type(t);
  std::vector<char> chosen(jobs.size(), 0);
  std::vector<std::pair<std::size_t, std::size_t>> picks;  // (row, type)
  for (const Pair& p : pairs) {
    const Job& j = s.jobs[jobs[p.row]];
    if (chosen[p.row] || left[p.type] < j.workers) continue;
    chosen[p.row] = 1;
    left[p.type] -= j.workers;
    picks.push_back({p.row, p.type});
  }

  // Place: renewals in place first, then more workers first.
  std::vector<Assignment> out;
  std::vector<std::pair<std::size_t, std::size_t>> rest;
  for (auto [r, t] : picks) {
    const Job& j = s.jobs[jobs[r]];
    bool same_type = j.state == JobState::kRunning &&
                     std::all_of(j.devices.begin(), j.devices.end(),
                                 [&, t = t](DeviceRef d) { return s.type_of(d) == t; });
    if (same_type && free.take(j.devices))
      out.push_back({jobs[r], j.devices, lease_end});
    else
      rest.push_back({r, t});
  }
  std::stable_sort(rest.begin(), rest.end(), [&](const auto& a, const auto& b) {
    return s.jobs[jobs[a.first]].workers > s.jobs[jobs[b.first]].workers;
  });
  for (auto [r, t] : rest) {
    auto devices = free.pick(t, s.jobs[jobs[r]].workers);
    if (!devices.empty()) {
      out.push_back({jobs[r], std::move(devices), lease_end});
    } else {
      chosen[r] = 0;  // its type's devices were too scattered: a backfill candidate
    }
  }

  // Backfill: the rows left out, by their best priority, in place first.
  if (free.total_free() == 0) return out;
  std::vector<std::size_t> left_out;
  std::vector<double> best(jobs.size(), -1.0);  // -1: no allocation on any type
  for (const Pair& p : pairs) best[p.row] = std::max(best[p.row], p.priority);
  for (std::size_t r = 0; r < jobs.size(); ++r)
    if (!chosen[r]) left_out.push_back(r);
  std::stable_sort(left_out.begin(), left_out.end(), [&](std::size_t a, std::size_t b) {
    if (best[a] != best[b]) return best[a] > best[b];
    return s.jobs[jobs[a]].arrival < s.jobs[jobs[b]].arrival;
  });
  std::vector<std::size_t> to_start;
  for (std::size_t r : left_out) {
    const Job& j = s.jobs[jobs[r]];
    if (j.state == JobState::kRunning && free.take(j.devices))
      out.push_back({jobs[r], j.devices, lease_end});
    else
      to_start.push_back(r);
  }
  std::vector<int> counts(k);
  for (std::size_t r : to_start) {
    if (free.total_free() == 0) break;
    const Job& j = s.jobs[jobs[r]];
    // One type if one holds the gang (the fastest for this job), else the
    // job's types fastest first.
    std::vector<std::size_t> order;
    for (std::size_t t = 0; t < k; ++t)
      if (j.runs_on(t)) order.push_back(t);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return j.rate_best[a] > j.rate_best[b];
    });
    std::fill(counts.begin(), counts.end(), 0);
    int need = j.workers;
    for (std::size_t t : order)
      if (free.can_hold(t, need)) {
        counts[t] = need;
        need = 0;
        break;
      }
    for (std::size_t t : order) {
      if (need == 0 || free.gangs_on_one_node()) break;
      counts[t] = std::min(need, free.free_of_type(t));
      need -= counts[t];
    }
    if (need > 0) continue;
    out.push_back({jobs[r], place_on_counts(free, counts), lease_end});
  }
  return out;
}

}  // namespace fairgpu::placement
