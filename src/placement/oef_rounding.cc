// OEF §4.3 rounding placer. Per round t and entity j (a tenant, or one job
// type of a tenant), per GPU type:
//   real_j(t) = floor(ideal_j(t) + dev_j(t)),  dev_j(t+1) = dev_j(t) + ideal_j(t) - real_j(t)
// with these choices where the paper is silent:
//   - deviations are kept per GPU type, and `real` is what the entity actually
//     held this round (after gang packing and leftovers), so every GPU it got
//     or missed counts;
//   - when the floors of a type exceed its capacity (accumulated positive
//     deviations), the largest ideal+dev are served first;
//   - small-share rule: an entity whose integral share is below its smallest
//     job's gang gets 0 this round and keeps accumulating;
//   - jobs are chosen round-robin, longest starvation first (OEF §6.1.3); jobs
//     with more workers are placed first and on one host when possible, on
//     the entity's type where the job runs fastest; a job that needs more
//     than one type takes the entity's types fastest first (for the job),
//     which are adjacent (Theorem 5.2);
//   - GPUs still free after that go to waiting jobs of the entities furthest
//     below their ideal (renewing preempted ones in place first): rounds do
//     not idle GPUs that work is waiting for;
//   - deviations are clamped to +-(the entity's ideal total + largest gang) so
//     a share it cannot use (nothing fits) does not grow without bound, and
//     forgotten when the entity has no active job.
#include "placement/oef_rounding.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "placement/devices.h"

namespace fairgpu::placement {

void order_by_starvation(const SchedulerState& s, std::vector<std::size_t>& jobs) {
  auto key = [&](std::size_t i) {
    const Job& j = s.jobs[i];
    // Waiting: starved since last_stop (>= 0). Running: -(time running), so
    // the job that has run longest yields first.
    return j.state == JobState::kRunning ? -(s.now - j.run_start) - 1.0 : s.now - j.last_stop;
  };
  std::stable_sort(jobs.begin(), jobs.end(), [&](std::size_t a, std::size_t b) {
    double ka = key(a), kb = key(b);
    return ka != kb ? ka > kb : a < b;
  });
}

std::vector<DeviceRef> place_on_counts(FreeDevices& free, const std::vector<int>& counts) {
  std::vector<DeviceRef> out;
  for (std::size_t t = counts.size(); t-- > 0;) {
    if (counts[t] == 0) continue;
    auto part = free.pick(t, counts[t]);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

namespace {

// Where a gang of g goes within per-type budgets: the type where this job
// runs fastest (on one node if a node has room, else spread), or, when no
// type holds the whole gang, its fastest types first (a straggler at the
// slowest one used). False if the budgets cannot hold it.
bool choose_counts(const Job& j, const std::vector<int>& budget, const FreeDevices& free,
                   std::vector<int>& counts) {
  const std::size_t k = budget.size();
  const int g = j.workers;
  counts.assign(k, 0);
  double best = 0.0;
  std::size_t best_type = k;
  for (std::size_t t = 0; t < k; ++t) {
    if (budget[t] < g) continue;
    double rate = free.fits_one_node(t, g) ? j.rate_one_node[t] : j.rate_spread[t];
    if (rate > best) best = rate, best_type = t;
  }
  if (best_type < k) {
    counts[best_type] = g;
    return true;
  }
  std::vector<std::size_t> order(k);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return j.rate_one_node[a] > j.rate_one_node[b];
  });
  int need = g;
  for (std::size_t t : order) {
    counts[t] = std::min(need, budget[t]);
    need -= counts[t];
  }
  return need == 0;
}

bool devices_within(const SchedulerState& s, const Job& j, const std::vector<int>& budget,
                    std::vector<int>& used) {
  used.assign(budget.size(), 0);
  for (DeviceRef d : j.devices) ++used[s.type_of(d)];
  for (std::size_t t = 0; t < budget.size(); ++t)
    if (used[t] > budget[t]) return false;
  return true;
}

}  // namespace

std::vector<Assignment> OefRoundingPlacer::place(const SchedulerState& s,
                                                 const std::vector<RoundingEntity>& entities,
                                                 double lease_end) {
  const std::size_t k = s.model->cluster.num_types();
  const std::size_t n = entities.size();
  std::vector<Assignment> out;
  FreeDevices free(s);

  // 1. Integral shares: floor(ideal + dev), capacity-limited per type.
  std::vector<std::vector<double>> want(n, std::vector<double>(k, 0.0));
  std::vector<std::vector<int>> cnt(n, std::vector<int>(k, 0));
  for (std::size_t e = 0; e < n; ++e) {
    auto it = dev_.find(entities[e].key);
    for (std::size_t t = 0; t < k; ++t) {
      want[e][t] = entities[e].ideal[t] + (it == dev_.end() ? 0.0 : it->second[t]);
      cnt[e][t] = static_cast<int>(std::max(0.0, std::floor(want[e][t] + 1e-9)));
    }
  }
  std::vector<std::size_t> order(n);
  for (std::size_t t = 0; t < k; ++t) {
    int left = free.free_of_type(t);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return want[a][t] > want[b][t]; });
    for (std::size_t e : order) {
      cnt[e][t] = std::min(cnt[e][t], left);
      left -= cnt[e][t];
    }
  }

  // 2. Jobs per entity, round-robin; small-share rule.
  std::vector<std::vector<std::size_t>> ordered(n);
  std::vector<std::vector<std::size_t>> chosen(n);
  std::vector<char> taken(s.jobs.size(), 0);
  for (std::size_t e = 0; e < n; ++e) {
    ordered[e] = entities[e].jobs;
    order_by_starvation(s, ordered[e]);
    int budget = std::accumulate(cnt[e].begin(), cnt[e].end(), 0);
    int min_gang = budget + 1;
    for (std::size_t i : ordered[e]) min_gang = std::min(min_gang, s.jobs[i].workers);
    if (budget < min_gang) {
      std::fill(cnt[e].begin(), cnt[e].end(), 0);
      continue;
    }
    for (std::size_t i : ordered[e]) {
      if (s.jobs[i].workers > budget) continue;
      chosen[e].push_back(i);
      budget -= s.jobs[i].workers;
    }
  }

  // 3. Renew chosen running jobs whose devices fit the entity's counts,
  // unless the counts offer a type where the job would run so much faster
  // that moving pays its restart overhead within the lease.
  std::vector<std::vector<int>> held(n, std::vector<int>(k, 0));
  std::vector<int> used;
  struct Pending { std::size_t e, job; };
  std::vector<Pending> to_place;
  const double lease = lease_end - s.now;
  auto worth_moving = [&](const Job& j, const std::vector<int>& budget) {
    double best = 0.0;
    for (std::size_t t = 0; t < k; ++t)
      if (budget[t] >= j.workers && j.runs_on(t))
        best = std::max(best, free.fits_one_node(t, j.workers) ? j.rate_one_node[t]
                                                               : j.rate_spread[t]);
    return best * (lease - j.restart_overhead_s) > j.rate * lease * (1 + 1e-9);
  };
  // Job i of entity e keeps its devices (already taken from `free`), or
  // starts on free ones within the entity's counts (or, for leftovers, on any);
  // either way what it holds is charged to e (and to its counts).
  auto keep = [&](std::size_t e, std::size_t i, bool within_counts) {
    for (DeviceRef d : s.jobs[i].devices) {
      ++held[e][s.type_of(d)];
      if (within_counts) --cnt[e][s.type_of(d)];
    }
    out.push_back({i, s.jobs[i].devices, lease_end});
    taken[i] = 1;
  };
  std::vector<int> counts, budget(k);
  auto start = [&](std::size_t e, std::size_t i, bool within_counts) {
    const Job& j = s.jobs[i];
    for (std::size_t t = 0; t < k; ++t)
      budget[t] = !j.runs_on(t)     ? 0
                  : within_counts ? std::min(cnt[e][t], free.free_of_type(t))
                                  : free.free_of_type(t);
    if (!choose_counts(j, budget, free, counts)) return;
    auto devices = place_on_counts(free, counts);
    for (std::size_t t = 0; t < k; ++t) {
      held[e][t] += counts[t];
      if (within_counts) cnt[e][t] -= counts[t];
    }
    out.push_back({i, std::move(devices), lease_end});
    taken[i] = 1;
  };
  for (std::size_t e = 0; e < n; ++e) {
    for (std::size_t i : chosen[e]) {
      const Job& j = s.jobs[i];
      if (j.state == JobState::kRunning && devices_within(s, j, cnt[e], used) &&
          !worth_moving(j, cnt[e]) && free.take(j.devices))
        keep(e, i, true);
      else
        to_place.push_back({e, i});
    }
  }
  // 4. Place the rest, more workers first (OEF §4.3), on one host when possible.
  std::stable_sort(to_place.begin(), to_place.end(), [&](const Pending& a, const Pending& b) {
    return s.jobs[a.job].workers > s.jobs[b.job].workers;
  });
  for (const Pending& p : to_place) start(p.e, p.job, true);

  // 5. Leftovers: entities furthest below their ideal first; renew their
  // preempted jobs in place, then start waiting ones.
  if (free.total_free() > 0) {
    std::vector<double> deficit(n, 0.0);
    for (std::size_t e = 0; e < n; ++e)
      for (std::size_t t = 0; t < k; ++t) deficit[e] += want[e][t] - held[e][t];
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return deficit[a] > deficit[b]; });
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t e : order) {
        for (std::size_t i : ordered[e]) {
          if (free.total_free() == 0) break;
          const Job& j = s.jobs[i];
          if (taken[i]) continue;
          if (pass == 0) {
            if (j.state == JobState::kRunning && free.take(j.devices)) keep(e, i, false);
          } else {
            start(e, i, false);
          }
        }
      }
    }
  }

  // 6. Deviations from what each entity actually held.
  std::map<std::uint64_t, std::vector<double>> next;
  for (std::size_t e = 0; e < n; ++e) {
    const RoundingEntity& ent = entities[e];
    double cap = std::accumulate(ent.ideal.begin(), ent.ideal.end(), 0.0);
    int largest = 0;
    for (std::size_t i : ent.jobs) largest = std::max(largest, s.jobs[i].workers);
    cap += largest;
    std::vector<double> d(k);
    for (std::size_t t = 0; t < k; ++t)
      d[t] = std::clamp(want[e][t] - held[e][t], -cap, cap);
    next[ent.key] = std::move(d);
  }
  dev_ = std::move(next);
  return out;
}

}  // namespace fairgpu::placement
