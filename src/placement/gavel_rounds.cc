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
                                             const std::vector<std::size_t>& jobs, const Matrix& x,
                                             double lease_end, const GavelRoundOptions& options) {
  const std::size_t k = s.model->cluster.num_types();
  FreeDevices free(s);
  // Whether a gang waits rather than run spread on type t now: a node of t
  // could hold it (rate_best is then its one-node rate), spread it runs below
  // spread_min of that, and it has not waited spread_wait_s.
  auto rate_now = [&](const Job& j, std::size_t t) {
    return free.fits_one_node(t, j.workers) ? j.rate_one_node[t] : j.rate_spread[t];
  };
  auto holds_out = [&](const Job& j, std::size_t t) {
    return options.spread_min > 0.0 && rate_now(j, t) < options.spread_min * j.rate_best[t] &&
           !(j.state != JobState::kRunning && s.now - j.last_stop >= options.spread_wait_s - 1e-9);
  };
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
  std::vector<std::pair<std::size_t, std::size_t>> rest, spread_renewals;
  for (auto [r, t] : picks) {
    const Job& j = s.jobs[jobs[r]];
    bool same_type = j.state == JobState::kRunning &&
                     std::all_of(j.devices.begin(), j.devices.end(),
                                 [&, t = t](DeviceRef d) { return s.type_of(d) == t; });
    const bool spread =
        same_type && std::any_of(j.devices.begin(), j.devices.end(),
                                 [&](DeviceRef d) { return d.node != j.devices.front().node; });
    if (spread && options.spread_min > 0.0 &&
        j.rate_spread[t] < options.spread_min * j.rate_best[t]) {
      spread_renewals.push_back({r, t});  // after the others: a node of its type may be free
    } else if (same_type && free.take(j.devices)) {
      out.push_back({jobs[r], j.devices, lease_end});
    } else {
      rest.push_back({r, t});
    }
  }
  // A gang renewed spread moves onto one node of its type when one is free
  // (its own devices count), else stays.
  for (auto [r, t] : spread_renewals) {
    const Job& j = s.jobs[jobs[r]];
    if (free.fits_one_node(t, j.workers))
      out.push_back({jobs[r], free.pick(t, j.workers), lease_end});
    else if (free.take(j.devices))
      out.push_back({jobs[r], j.devices, lease_end});
    else
      rest.push_back({r, t});
  }
  std::stable_sort(rest.begin(), rest.end(), [&](const auto& a, const auto& b) {
    return s.jobs[jobs[a.first]].workers > s.jobs[jobs[b.first]].workers;
  });
  std::vector<char> holding(jobs.size(), 0);  // waits for a good placement this round
  for (auto [r, t] : rest) {
    const Job& j = s.jobs[jobs[r]];
    if (holds_out(j, t)) {
      chosen[r] = 0;
      holding[r] = 1;
      continue;
    }
    auto devices = free.pick(t, j.workers);
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
  std::vector<std::size_t> order, by_rate;
  std::vector<double> now_rate(k);
  for (std::size_t r : to_start) {
    if (free.total_free() == 0) break;
    const Job& j = s.jobs[jobs[r]];
    // One type if one holds the gang (the fastest for this job as placed
    // now: one node or spread), else the job's types fastest first; a gang
    // holding out takes no placement it waits to improve on.
    order.clear();
    for (std::size_t t = 0; t < k; ++t)
      if (j.runs_on(t)) order.push_back(t);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return j.rate_best[a] > j.rate_best[b];
    });
    for (std::size_t t : order) now_rate[t] = free.can_hold(t, j.workers) ? rate_now(j, t) : 0.0;
    by_rate = order;
    std::stable_sort(by_rate.begin(), by_rate.end(),
                     [&](std::size_t a, std::size_t b) { return now_rate[a] > now_rate[b]; });
    std::fill(counts.begin(), counts.end(), 0);
    int need = j.workers;
    for (std::size_t t : by_rate)
      if (free.can_hold(t, need) && !(holding[r] && holds_out(j, t))) {
        counts[t] = need;
        need = 0;
        break;
      }
    for (std::size_t t : order) {
      if (need == 0 || free.gangs_on_one_node() || free.gangs_spread_evenly() || holding[r])
        break;
      counts[t] = std::min(need, free.free_of_type(t));
      need -= counts[t];
    }
    if (need > 0) continue;
    out.push_back({jobs[r], place_on_counts(free, counts), lease_end});
  }
  return out;
}

}  // namespace fairgpu::placement
