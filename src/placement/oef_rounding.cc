// OEF §4.3 rounding placer. Per round t and entity j (a tenant, or one job
// type of a tenant), per GPU type:
//   real_j(t) = floor(ideal_j(t) + dev_j(t)),  dev_j(t+1) = dev_j(t) + ideal_j(t) - real_j(t)
// where real_j(t) is what the entity actually held (after gang packing and
// leftovers), so every GPU it got or missed counts. dev is the entity's credit.
// The paper rounds type by type and skips a job that does not fit; on a loaded
// cluster with gangs that starves big jobs and rotates every job every round.
// So, where the paper is silent:
//   - quantum: a job started within its entity's share keeps its GPUs for
//     RoundingOptions::quantum_s from its start, unless the entity's ideal
//     share drops below what it holds (then the newest such jobs stay first);
//     any other job running for less than the quantum (a leftover, a
//     mid-round start) comes before its entity's waiting jobs in the
//     round-robin: swapping it for one of them buys the entity nothing and
//     costs a restart (with 20 s rounds the live manager swapped a tenant's
//     jobs nearly every round: issue 32 item 11);
//   - the budget is the entity's total credit, floor(sum_t ideal + dev), not
//     per-type floors (which flip from round to round); the per-type credit
//     only steers which types a start may go to (those the entity is owed, so
//     its types stay those of its share: Theorem 5.2's adjacency);
//   - placement follows rates: among those types, the one owed most (up to
//     the gang) first, then the rate the gang will get there (one node,
//     spread, or mixed types at the slowest one's spread rate); a gang takes
//     no spread or mixed placement below spread_min (0.9) of the best rate
//     those types could give it (rate_best: one node where a node is big
//     enough) until it has waited spread_wait_s (5400 s), and meanwhile is
//     placed first every round, its types' other starts outside the quantum
//     so a node frees up;
//   - gangs do not starve (the small-share rule generalised to gangs): jobs
//     are taken round-robin, longest starvation first (OEF §6.1.3), and an
//     entity whose next job does not fit its credit starts nothing else, so
//     its credit grows by its ideal share every round until the gang fits; a
//     job chosen but with no room waits at the head of the next round's
//     placements, and every start after such a miss is outside the quantum
//     (renewed only if chosen again), so it waits at most one quantum;
//   - jobs with more workers are placed first and on one host when possible;
//   - GPUs still free go to waiting jobs of the entities furthest below their
//     share (renewing preempted ones in place first; entities saving up for a
//     gang last, their head job first), in two sweeps: first only on types of
//     the entity's share at a good rate (type-affine: a free fast GPU goes to
//     an entity whose share includes it before a slow job that happens to be
//     next), then anywhere: no GPU idles while a job that fits waits; a gang
//     holding out for a good rate comes last, on what nobody else took
//     (spread_idle), and stays first in line; a leftover costs credit only on
//     a type the entity is owed, and is outside the quantum;
//   - a renewal of a job spread below spread_min of its rate on its type, or
//     on a type faster than its entity's share (a slow job on a fast GPU), is
//     a move candidate: it restarts where a start would go if that is free,
//     else it is renewed in place;
//   - a running job moves onto idle faster GPUs when the gain repays its
//     restart within the lease;
//   - a running job that finishes before the lease ends, or within
//     keep_restarts of its restart overheads, keeps its GPUs and is not
//     moved (keep_finishing): a share correction for less than a round, or
//     worth fewer restarts than that, is not worth its restart and its wait;
//   - a placer's first round counts the jobs already running (the live
//     manager rebuilds its policy on a restart, drain or undrain) as placed
//     within their share: the quantum goes on rather than a reshuffle;
//   - credits are clamped to +-(ideal total + largest gang) x max(1, quantum
//     in rounds) so a share the entity cannot use does not grow without
//     bound, and forgotten when the entity has no active job.
#include "placement/oef_rounding.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>

#include "placement/devices.h"

namespace fairgpu::placement {

double seconds_left(const Job& j, double now) {
  if (j.state != JobState::kRunning || !(j.rate > 0.0))
    return std::numeric_limits<double>::infinity();
  // Progress is settled only up to settled_at; the restart overhead left
  // then makes no progress.
  const double ran = std::max(0.0, now - j.settled_at - j.overhead_left);
  return (j.remaining() - ran * j.rate) / j.rate;
}

bool finishes_by(const Job& j, double now, double until) {
  return seconds_left(j, now) <= until - now + 1e-9;
}

void order_by_starvation(const SchedulerState& s, std::vector<std::size_t>& jobs) {
  // Waiting: starved since last_stop (>= 0). Running: -(time running), so
  // the job that has run longest yields first. Keys computed once: entities
  // hold thousands of backlogged jobs in the simulator.
  std::vector<std::pair<double, std::size_t>> keyed(jobs.size());
  for (std::size_t r = 0; r < jobs.size(); ++r) {
    const Job& j = s.jobs[jobs[r]];
    const double starved =
        j.state == JobState::kRunning ? -(s.now - j.run_start) - 1.0 : s.now - j.last_stop;
    keyed[r] = {-starved, jobs[r]};  // ascending: most starved first, then index
  }
  std::sort(keyed.begin(), keyed.end());
  for (std::size_t r = 0; r < jobs.size(); ++r) jobs[r] = keyed[r].second;
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

double rate_on(const Job& j, const FreeDevices& free, std::size_t t) {
  return free.fits_one_node(t, j.workers) ? j.rate_one_node[t] : j.rate_spread[t];
}

// The best rate the gang could ever get on one of the types it may use
// (limit[t] > 0) that can hold it: one node where a node of the type is big
// enough, else spread (rate_best). 0 when only mixed types can hold it.
double best_rate_within(const Job& j, const std::vector<int>& limit,
                        const std::vector<int>& capacity) {
  double best = 0.0;
  for (std::size_t t = 0; t < limit.size(); ++t)
    if (limit[t] > 0 && j.runs_on(t) && capacity[t] >= j.workers)
      best = std::max(best, j.rate_best[t]);
  return best;
}

enum class Fit { kPlaced, kNoRoom, kTooSlow };

// Where a gang of g goes on free devices, at most limit[t] on type t: one
// type if one can hold it, the type the entity is owed most first (owed
// counted up to g, so the credit still steers), then the rate the gang will
// get there (one node, or spread); else the types mixed, fastest first (a
// straggler at the slowest used type's spread rate). A spread or mixed
// placement below min_rate is not taken (kTooSlow: the gang waits for a
// better one); kNoRoom if the limits and free devices cannot hold the gang.
Fit choose_counts(const Job& j, const std::vector<double>& owed, const std::vector<int>& limit,
                  const FreeDevices& free, double min_rate, std::vector<int>& counts,
                  std::vector<std::size_t>& order) {
  const std::size_t k = owed.size();
  const int g = j.workers;
  counts.assign(k, 0);
  order.clear();
  for (std::size_t t = 0; t < k; ++t)
    if (j.runs_on(t) && limit[t] > 0) order.push_back(t);
  auto room = [&](std::size_t t) { return std::min(limit[t], free.free_of_type(t)); };
  auto owed_up_to_gang = [&](std::size_t t) { return std::min(owed[t], double(g)); };
  std::size_t best = k;
  double best_rate = 0.0;
  bool too_slow = false;
  for (std::size_t t : order) {
    if (room(t) < g || !free.can_hold(t, g)) continue;
    const bool one_node = free.fits_one_node(t, g);
    const double r = one_node ? j.rate_one_node[t] : j.rate_spread[t];
    if (!one_node && r < min_rate) {
      too_slow = true;
      continue;
    }
    const double o = owed_up_to_gang(t), best_o = best == k ? 0.0 : owed_up_to_gang(best);
    if (best == k || o > best_o + 1e-9 || (o > best_o - 1e-9 && r > best_rate)) {
      best = t;
      best_rate = r;
    }
  }
  if (best != k) {
    counts[best] = g;
    return Fit::kPlaced;
  }
  // Never mixed where gangs keep to one node or one even spread.
  if (free.gangs_on_one_node() || free.gangs_spread_evenly())
    return too_slow ? Fit::kTooSlow : Fit::kNoRoom;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return j.rate_spread[a] > j.rate_spread[b];
  });
  int need = g;
  double straggler = 0.0;
  for (std::size_t t : order) {
    if (need == 0) break;
    counts[t] = std::min(need, room(t));
    need -= counts[t];
    if (counts[t] > 0) straggler = j.rate_spread[t];
  }
  if (need == 0 && straggler >= min_rate) return Fit::kPlaced;
  std::fill(counts.begin(), counts.end(), 0);
  return need == 0 || too_slow ? Fit::kTooSlow : Fit::kNoRoom;
}

}  // namespace

void OefRoundingPlacer::prepare_devices(const SchedulerState& s) { free_.emplace(s); }

void OefRoundingPlacer::prepare_jobs(const SchedulerState& s,
                                     const std::vector<RoundingEntity>& entities) {
  const std::size_t k = s.model->cluster.num_types();
  const std::size_t n = entities.size();
  // The jobs' views, gathered with the next jobs fetched ahead: over all
  // entities' jobs in one list, as most entities hold a job or two. The
  // passes below name a job by its position p in that list (entity e's jobs
  // at [entity_first_[e], entity_first_[e + 1])), so they read the view in
  // order rather than at the jobs' scattered indices.
  const bool type_bits = k <= 8;
  view_devices_.clear();
  all_jobs_.clear();
  entity_first_.assign(n + 1, 0);
  for (std::size_t e = 0; e < n; ++e) {
    all_jobs_.insert(all_jobs_.end(), entities[e].jobs.begin(), entities[e].jobs.end());
    entity_first_[e + 1] = all_jobs_.size();
  }
  view_.resize(all_jobs_.size());
  taken_.assign(all_jobs_.size(), 0);
  // Each entity's largest gang (for its credit clamp), taken here rather than
  // in a later pass over the view at its jobs' scattered places.
  largest_gang_.assign(n, 0);
  {
    constexpr std::size_t kAhead = 16;
    const std::size_t count = all_jobs_.size();
    std::size_t e_of_r = 0, e_end = n > 0 ? entities[0].jobs.size() : 0;
    for (std::size_t r = 0; r < count; ++r) {
      while (r >= e_end) e_end += entities[++e_of_r].jobs.size();
      if (r + kAhead < count) {
        const Job& ahead = s.jobs[all_jobs_[r + kAhead]];
        __builtin_prefetch(&ahead.workers);
        __builtin_prefetch(&ahead.run_start);
      }
      if (r + kAhead / 2 < count) {  // its vectors, the job now in cache
        const Job& ahead = s.jobs[all_jobs_[r + kAhead / 2]];
        if (type_bits) __builtin_prefetch(ahead.rate_best.data());
        if (ahead.state == JobState::kRunning) __builtin_prefetch(ahead.devices.data());
      }
      const Job& j = s.jobs[all_jobs_[r]];
      JobView& v = view_[r];
      v.run_start = j.run_start;
      v.last_stop = j.last_stop;
      v.workers = j.workers;
      v.running = j.state == JobState::kRunning;
      v.first_device = static_cast<std::uint32_t>(view_devices_.size());
      v.device_count = v.running ? static_cast<std::uint32_t>(j.devices.size()) : 0;
      if (v.running) view_devices_.insert(view_devices_.end(), j.devices.begin(), j.devices.end());
      v.types = 0;
      if (type_bits)
        for (std::size_t t = 0; t < k; ++t)
          if (j.runs_on(t)) v.types = static_cast<std::uint8_t>(v.types | 1u << t);
      v.fastest_held = 0;
      v.rate_ok = true;
      if (v.running && !j.devices.empty()) {
        std::size_t slowest = k, fastest = 0;  // types are ordered slowest first
        bool spans_nodes = false;
        for (DeviceRef d : j.devices) {
          slowest = std::min(slowest, s.type_of(d));
          fastest = std::max(fastest, s.type_of(d));
          spans_nodes |= d.node != j.devices.front().node;
        }
        v.fastest_held = static_cast<std::uint32_t>(fastest);
        // Job::rate also carries the CPU and memory multiplier, which moving
        // does not change: the placement's own rate from its devices.
        const double rate = spans_nodes ? j.rate_spread[slowest] : j.rate_one_node[slowest];
        v.rate_ok = rate >= options_.spread_min * j.rate_best[slowest];
      }
      largest_gang_[e_of_r] = std::max(largest_gang_[e_of_r], v.workers);
    }
  }
  jobs_prepared_ = true;
}

std::vector<Assignment> OefRoundingPlacer::place(const SchedulerState& s,
                                                 const std::vector<RoundingEntity>& entities,
                                                 double lease_end) {
  const std::size_t k = s.model->cluster.num_types();
  const std::size_t n = entities.size();
  const double lease = lease_end - s.now;
  std::vector<Assignment> out;
  std::vector<std::size_t> entity_of_out;  // the entity charged for each of `out`
  entity_of_placed_.clear();
  if (!free_) prepare_devices(s);
  FreeDevices& free = *free_;
  // What was prepared serves this call only, however it ends.
  struct Done {
    OefRoundingPlacer& placer;
    ~Done() {
      placer.free_.reset();
      placer.jobs_prepared_ = false;
    }
  } done{*this};

  // Entitlement: ideal + credit, per type and in total.
  // Per entity and type, flat (row e at e * k): one allocation, not one per entity.
  want_.assign(n * k, 0.0);
  held_.assign(n * k, 0);
  auto want = [&](std::size_t e) { return want_.data() + e * k; };
  auto held = [&](std::size_t e) { return held_.data() + e * k; };
  std::vector<double> ideal_total(n, 0.0), want_total(n, 0.0);
  for (std::size_t e = 0; e < n; ++e) {
    const auto it = std::lower_bound(dev_keys_.begin(), dev_keys_.end(), entities[e].key);
    const bool known = it != dev_keys_.end() && *it == entities[e].key;
    const double* credit =
        known ? &dev_[static_cast<std::size_t>(it - dev_keys_.begin()) * k] : nullptr;
    for (std::size_t t = 0; t < k; ++t) {
      want(e)[t] = entities[e].ideal[t] + (credit ? credit[t] : 0.0);
      ideal_total[e] += entities[e].ideal[t];
      want_total[e] += want(e)[t];
    }
  }
  std::vector<int> held_total(n, 0);
  flagged_.resize(s.jobs.size(), 0);
  std::vector<char>& flagged = flagged_;
  if (!jobs_prepared_) prepare_jobs(s, entities);
  std::vector<char>& taken = taken_;
  const std::vector<std::size_t>& job_at = all_jobs_;
  const bool type_bits = k <= 8;  // JobView::types holds the types a job runs on
  const std::vector<JobView>& view = view_;
  // A running job's devices, from the view (by position).
  auto devices_of = [&](std::size_t p) {
    return std::span<const DeviceRef>(view_devices_.data() + view[p].first_device,
                                      view[p].device_count);
  };
  std::vector<std::size_t> position_of_out;  // each of `out`'s position
  std::vector<std::size_t> next_in_share, next_waiting;

  // A leftover GPU counts against the entity only on a type it is owed
  // (its fractional share claimed part of it); on another type it costs no
  // credit, so a slow GPU nobody wanted does not crowd out the types the
  // entity's share is on.
  auto charge = [&](std::size_t e, std::size_t p, std::vector<DeviceRef> devices, bool in_share) {
    for (DeviceRef d : devices) {
      const std::size_t t = s.type_of(d);
      if (!in_share && !(want(e)[t] - held(e)[t] > 1e-9)) continue;
      ++held(e)[t];
      ++held_total[e];
    }
    const std::size_t i = job_at[p];
    if (in_share) next_in_share.push_back(i);
    out.push_back({i, std::move(devices), lease_end});
    entity_of_out.push_back(in_share ? e : n);
    entity_of_placed_.push_back(e);
    position_of_out.push_back(p);
    taken[p] = 1;
  };
  auto renew_in_place = [&](std::size_t e, std::size_t p, bool in_share) {
    if (!view[p].running) return false;
    const std::span<const DeviceRef> devices = devices_of(p);
    if (!free.take(devices)) return false;
    charge(e, p, std::vector<DeviceRef>(devices.begin(), devices.end()), in_share);
    return true;
  };
  // A start within the share goes only to types the entity is owed (up to
  // the owed count rounded up: what the per-type floors would give over the
  // next rounds), or to any type when those cannot hold its gang at all;
  // leftovers go anywhere.
  std::vector<int> counts, limit(k);
  std::vector<std::size_t> type_order;  // choose_counts' scratch
  std::vector<double> owed(k);
  auto within_share_limits = [&](std::size_t e, const Job& j) {
    int capacity = 0;
    for (std::size_t t = 0; t < k; ++t) {
      owed[t] = want(e)[t] - held(e)[t];
      limit[t] = owed[t] > 1e-9 ? static_cast<int>(std::ceil(owed[t] - 1e-9)) : 0;
      if (limit[t] > 0 && j.runs_on(t)) capacity += s.model->capacity[t];
    }
    if (capacity < j.workers) std::fill(limit.begin(), limit.end(), j.workers);
  };
  // How a start is placed: within the share (owed types, rates that follow),
  // a leftover on the entity's own share types at a good rate (`kAffine`), or
  // a leftover anywhere at any rate (`kAny`, work conservation).
  // `kIdle`: a held-out gang on GPUs nobody took, by rate alone.
  enum class Mode { kShare, kAffine, kAny, kIdle };
  // Types of the entity's share (ideal > 0): where kAffine leftovers go.
  auto affine_limits = [&](std::size_t e, const Job& j) {
    for (std::size_t t = 0; t < k; ++t)
      limit[t] = !options_.type_affine || entities[e].ideal[t] > 1e-9 ? j.workers : 0;
  };
  // A gang takes no placement below spread_min of the best rate it could get
  // on the types it may use until it has waited spread_wait_s.
  auto min_rate_of = [&](const Job& j, bool waits) {
    if (waits && s.now - j.last_stop >= options_.spread_wait_s - 1e-9) return 0.0;
    return options_.spread_min * best_rate_within(j, limit, s.model->capacity);
  };
  auto start = [&](std::size_t e, std::size_t p, Mode mode) {
    if (type_bits) {  // the same test as below, on the view
      int free_usable = 0;
      for (std::size_t t = 0; t < k; ++t)
        if (view[p].types >> t & 1) free_usable += free.free_of_type(t);
      if (free_usable < view[p].workers) return Fit::kNoRoom;
    }
    const Job& j = s.jobs[job_at[p]];
    int free_usable = 0;  // what choose_counts could find at best
    for (std::size_t t = 0; t < k; ++t)
      if (j.runs_on(t)) free_usable += free.free_of_type(t);
    if (free_usable < j.workers) return Fit::kNoRoom;
    double min_rate = 0.0;
    if (mode == Mode::kShare) {
      within_share_limits(e, j);
      min_rate = min_rate_of(j, true);
    } else {
      for (std::size_t t = 0; t < k; ++t) owed[t] = want(e)[t] - held(e)[t];
      if (mode == Mode::kAffine) {
        affine_limits(e, j);
        min_rate = min_rate_of(j, false);
      } else {
        std::fill(limit.begin(), limit.end(), j.workers);
        if (mode == Mode::kIdle) std::fill(owed.begin(), owed.end(), 0.0);
      }
    }
    const Fit fit = choose_counts(j, owed, limit, free, min_rate, counts, type_order);
    if (fit == Fit::kPlaced) charge(e, p, place_on_counts(free, counts), mode == Mode::kShare);
    return fit;
  };
  // A running job is renewed where it is only if it runs there within
  // spread_min of its best rate on the (slowest) type it holds (rate_ok), and
  // on no type faster than its entity's share includes (a slow job kept on a
  // fast GPU its share does not include); else it is a move candidate. From
  // the view alone: this is asked of every running job in every leftover pass.
  auto runs_on = [&](std::size_t p, std::size_t t) {
    return type_bits ? (view[p].types >> t & 1) != 0 : s.jobs[job_at[p]].runs_on(t);
  };
  auto on_faster_type = [&](std::size_t e, std::size_t p) {
    if (!options_.type_affine || view[p].device_count == 0) return false;
    std::size_t fastest_allowed = 0;  // types are ordered slowest first
    for (std::size_t t = 0; t < k; ++t)
      if (entities[e].ideal[t] > 1e-9 && runs_on(p, t)) fastest_allowed = t;
    return view[p].fastest_held > fastest_allowed;
  };
  auto placed_well = [&](std::size_t e, std::size_t p) {
    return view[p].rate_ok && !on_faster_type(e, p);
  };

  // 1. The quantum: jobs placed within their share last round keep their
  // GPUs until it runs out, newest first while the ideal share covers them.
  // A fresh placer has no last round: the running jobs count as placed so.
  if (fresh_)
    for (std::size_t p = 0; p < view.size(); ++p)
      if (view[p].running) in_share_.push_back(job_at[p]);
  for (std::size_t i : in_share_) flagged[i] = 1;
  std::vector<std::size_t> kept;
  for (std::size_t e = 0; e < n; ++e) {
    kept.clear();
    for (std::size_t p = entity_first_[e]; p < entity_first_[e + 1]; ++p)
      if (flagged[job_at[p]] && view[p].running &&
          s.now - view[p].run_start < options_.quantum_s - 1e-9)
        kept.push_back(p);
    std::stable_sort(kept.begin(), kept.end(), [&](std::size_t a, std::size_t b) {
      return view[a].run_start > view[b].run_start;
    });
    for (std::size_t p : kept) {
      bool covered = true;  // by the ideal share on every type it holds
      for (DeviceRef d : devices_of(p))
        covered &= held(e)[s.type_of(d)] < entities[e].ideal[s.type_of(d)] - 1e-9;
      if (covered) renew_in_place(e, p, true);
    }
  }
  for (std::size_t i : in_share_) flagged[i] = 0;
  // ... and so does a job that finishes before the lease ends, or within
  // keep_restarts of its restart overheads, share or not (charged to its
  // entity's credit like any GPU it holds); nor does such a job move (5.).
  std::vector<char> finishing(view.size(), 0);
  if (options_.keep_finishing)
    for (std::size_t e = 0; e < n; ++e)
      for (std::size_t p = entity_first_[e]; p < entity_first_[e + 1]; ++p) {
        if (!view[p].running) continue;
        const Job& j = s.jobs[job_at[p]];
        const double keep_s = std::max(lease, options_.keep_restarts * j.restart_overhead_s);
        if (!(seconds_left(j, s.now) <= keep_s + 1e-9)) continue;
        finishing[p] = 1;
        if (!taken[p]) renew_in_place(e, p, true);
      }

  // 2. Choice: round-robin within the entity's credit, stopping at the first
  // job that does not fit (the entity saves up for it).
  // Each entity's jobs not kept, in starvation order: ordered(e), flat.
  ordered_.clear();
  ordered_first_.assign(n + 1, 0);
  auto ordered = [&](std::size_t e) {
    return std::span<const std::size_t>(ordered_.data() + ordered_first_[e],
                                        ordered_first_[e + 1] - ordered_first_[e]);
  };
  std::vector<char> saving(n, 0);
  struct Chosen {
    std::size_t e, pos;
  };
  std::vector<Chosen> chosen;
  // order_by_starvation() on the views (the same keys, ties by job index),
  // one buffer for all.
  struct Keyed {
    double key;
    std::size_t job, pos;
    bool operator<(const Keyed& o) const { return key < o.key || (key == o.key && job < o.job); }
  };
  std::vector<Keyed> keyed;
  constexpr double kWithinQuantum = 1e300;
  auto starvation_order = [&](std::span<std::size_t> at) {
    keyed.resize(at.size());
    for (std::size_t r = 0; r < at.size(); ++r) {
      const JobView& v = view[at[r]];
      // A job running for less than the quantum, however it started (a
      // leftover, mid-round), comes before its row's waiting jobs: swapping
      // it for one of them buys its row nothing and costs a restart.
      const double ran = s.now - v.run_start;
      const double starved = !v.running ? s.now - v.last_stop
                             : ran < options_.quantum_s - 1e-9 ? kWithinQuantum - ran
                                                                : -ran - 1.0;
      keyed[r] = {-starved, job_at[at[r]], at[r]};
    }
    std::sort(keyed.begin(), keyed.end());
    for (std::size_t r = 0; r < at.size(); ++r) at[r] = keyed[r].pos;
  };
  for (std::size_t e = 0; e < n; ++e) {
    ordered_first_[e] = ordered_.size();
    for (std::size_t p = entity_first_[e]; p < entity_first_[e + 1]; ++p)
      if (!taken[p]) ordered_.push_back(p);
    ordered_first_[e + 1] = ordered_.size();
    starvation_order(std::span<std::size_t>(ordered_.data() + ordered_first_[e],
                                            ordered_.size() - ordered_first_[e]));
    double budget = want_total[e] - held_total[e];
    for (std::size_t p : ordered(e)) {
      const int g = view[p].workers;
      if (g > budget + 1e-9) {
        // A running job ahead for its quantum competes as a leftover; the
        // row saves up only for a job that waits.
        if (view[p].running && s.now - view[p].run_start < options_.quantum_s - 1e-9) continue;
        saving[e] = 1;
        break;
      }
      chosen.push_back({e, p});
      budget -= g;
    }
  }

  // 3. Placement of the chosen: jobs that found no room last round first
  // (longest waiting first), renewals in place, then more workers first. After
  // a miss, starts are outside the quantum so the missed job finds room soon.
  for (std::size_t i : waiting_for_capacity_) flagged[i] = 1;
  std::vector<Chosen> first, rest;
  for (const Chosen& c : chosen) (flagged[job_at[c.pos]] ? first : rest).push_back(c);
  for (std::size_t i : waiting_for_capacity_) flagged[i] = 0;
  std::stable_sort(first.begin(), first.end(), [&](const Chosen& a, const Chosen& b) {
    return view[a.pos].last_stop < view[b.pos].last_stop;
  });
  // Types a missed job could have used: later starts there are outside the
  // quantum, so the missed job finds room within one quantum.
  std::vector<char> short_of_room(k, 0);
  auto uses_short_type = [&](const std::vector<DeviceRef>& devices) {
    for (DeviceRef d : devices)
      if (short_of_room[s.type_of(d)]) return true;
    return false;
  };
  // Chosen gangs waiting this round for a placement at a good rate: they
  // take no leftover below it either.
  std::vector<char> holding(view.size(), 0);
  std::vector<Chosen> held_out;
  auto place_chosen = [&](const Chosen& c, bool renew_otherwise) {
    const Fit fit = start(c.e, c.pos, Mode::kShare);
    if (fit == Fit::kPlaced || (renew_otherwise && renew_in_place(c.e, c.pos, true))) {
      // Still charged to the share, but not kept for a quantum.
      if (uses_short_type(out.back().devices)) next_in_share.pop_back();
      return;
    }
    if (fit == Fit::kTooSlow) {
      holding[c.pos] = 1;
      held_out.push_back(c);
    }
    const Job& j = s.jobs[job_at[c.pos]];
    within_share_limits(c.e, j);
    for (std::size_t t = 0; t < k; ++t)
      if (limit[t] > 0 && j.runs_on(t)) short_of_room[t] = 1;
    next_waiting.push_back(job_at[c.pos]);
  };
  for (const Chosen& c : first) place_chosen(c, false);
  // Renewals in place, except
  //   - a job spread below spread_min of its rate on its type: it moves where
  //     a start within the share goes (tried before other starts, its own
  //     devices still free), else stays;
  //   - a job on a type faster than its entity's share: it yields its GPUs
  //     to the starts within shares (renewed after them where none took
  //     them, else started within its own share). Moved to its share's type
  //     first, it went back to the idle faster GPUs at the end of the round
  //     (move_to_faster) and was moved again the next: at load 0.6 on the
  //     built-in scenario, 5,894 restarts for 300 jobs (affine off: 157).
  const bool check_renewals = options_.type_affine || options_.spread_min > 0.0;
  std::vector<Chosen> to_start, to_move, to_yield;
  auto renew_or_start = [&](const Chosen& c) {
    if (!renew_in_place(c.e, c.pos, true)) {
      to_start.push_back(c);
    } else if (uses_short_type(out.back().devices)) {
      next_in_share.pop_back();
    }
  };
  for (const Chosen& c : rest) {
    if (check_renewals && view[c.pos].running) {
      if (!view[c.pos].rate_ok) {
        to_move.push_back(c);
        continue;
      }
      if (on_faster_type(c.e, c.pos)) {
        to_yield.push_back(c);
        continue;
      }
    }
    renew_or_start(c);
  }
  for (const Chosen& c : to_move) place_chosen(c, true);
  std::stable_sort(to_start.begin(), to_start.end(), [&](const Chosen& a, const Chosen& b) {
    return view[a.pos].workers > view[b.pos].workers;
  });
  for (const Chosen& c : to_start) place_chosen(c, false);
  to_start.clear();
  for (const Chosen& c : to_yield) renew_or_start(c);
  for (const Chosen& c : to_start) place_chosen(c, false);

  // 4. Leftovers: entities furthest below their share first; those saving up
  // for a gang try that gang first and the rest of their jobs last.
  auto hand_out_leftovers = [&] {
    if (free.total_free() == 0) return;
    // Whether any job left could still be renewed or started: a start needs
    // its gang free on the types it runs on, a renewal its gang free at all.
    // Checked before each entity, it ends the passes once the free GPUs are
    // of no use to anyone (typically a few left on a loaded cluster), where
    // they would otherwise try every waiting job four times. Smallest gangs
    // by type mask, from the jobs not taken now (later takes only shrink
    // that set, so the test stays exact).
    const bool by_mask = type_bits;
    std::vector<int> smallest_gang(by_mask ? std::size_t{1} << k : 0, INT_MAX);
    int smallest_running_gang = INT_MAX;
    if (by_mask)
      for (std::size_t e = 0; e < n; ++e)
        for (std::size_t p : ordered(e)) {
          if (taken[p]) continue;
          const JobView& v = view[p];
          smallest_gang[v.types] = std::min(smallest_gang[v.types], v.workers);
          if (v.running) smallest_running_gang = std::min(smallest_running_gang, v.workers);
        }
    int checked_at_free = -1;  // the free count of the last check (true then)
    auto some_job_fits = [&] {
      if (!by_mask || free.total_free() == checked_at_free) return true;
      checked_at_free = free.total_free();
      if (smallest_running_gang <= free.total_free()) return true;
      for (std::size_t mask = 0; mask < smallest_gang.size(); ++mask) {
        if (smallest_gang[mask] == INT_MAX) continue;
        int room = 0;
        for (std::size_t t = 0; t < k; ++t)
          if (mask >> t & 1) room += free.free_of_type(t);
        if (smallest_gang[mask] <= room) return true;
      }
      return false;
    };
    // Every pass below checks this before it acts: when nothing fits now,
    // the order is not worth building.
    if (!some_job_fits()) return;
    // On equal deficits, an entity whose next job runs now goes first: it is
    // renewed in place rather than another job restarted there.
    std::vector<char> renews(n, 0);
    for (std::size_t e = 0; e < n; ++e)
      for (std::size_t p : ordered(e))
        if (!taken[p]) {
          renews[e] = view[p].running;
          break;
        }
    std::vector<double> deficit(n);
    for (std::size_t e = 0; e < n; ++e) deficit[e] = want_total[e] - held_total[e];
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const double da = deficit[a], db = deficit[b];
      if (std::fabs(da - db) > 1e-9) return da > db;
      return renews[a] > renews[b];
    });
    // Two sweeps: first only placements on the entity's share types at a
    // good rate (free GPUs of a type go to entities whose share includes it;
    // a renewal elsewhere waits for the second sweep), then anywhere at any
    // rate (work conservation), gangs holding out for a good rate last.
    auto renew_leftover = [&](std::size_t e, std::size_t p, Mode mode) {
      if (!view[p].running) return false;
      if (mode == Mode::kAffine) {
        if (!placed_well(e, p)) return false;
      } else if (holding[p]) {
        return false;
      }
      return renew_in_place(e, p, false);
    };
    auto start_leftover = [&](std::size_t e, std::size_t p, Mode mode) {
      if (mode == Mode::kAny && holding[p]) return;
      start(e, p, mode);
    };
    for (const Mode mode : {Mode::kAffine, Mode::kAny}) {
      if (mode == Mode::kAffine && !options_.type_affine && !(options_.spread_min > 0.0)) continue;
      for (std::size_t e : order) {
        if (!saving[e]) continue;
        if (!some_job_fits()) return;
        for (std::size_t p : ordered(e)) {
          if (taken[p]) continue;
          if (!renew_leftover(e, p, mode)) start_leftover(e, p, mode);
          break;  // only the head
        }
      }
      for (int saving_pass = 0; saving_pass < 2; ++saving_pass) {
        for (int pass = 0; pass < 2; ++pass) {
          for (std::size_t e : order) {
            if (saving[e] != saving_pass) continue;
            if (!some_job_fits()) return;
            for (std::size_t p : ordered(e)) {
              if (free.total_free() == 0) return;
              if (taken[p]) continue;
              if (pass == 0)
                renew_leftover(e, p, mode);
              else
                start_leftover(e, p, mode);
            }
          }
        }
      }
    }
  };
  hand_out_leftovers();
  // Gangs holding out run meanwhile on GPUs nobody else took (spread_idle),
  // as leftovers at the best rate those give: they stay first in line for a
  // good placement.
  if (options_.spread_idle)
    for (const Chosen& c : held_out) {
      if (free.total_free() == 0) break;
      if (taken[c.pos]) continue;  // placed well in the type-affine sweep
      if (!renew_in_place(c.e, c.pos, false)) start(c.e, c.pos, Mode::kIdle);
    }

  // 5. Idle faster GPUs: a running job kept on its devices moves there when
  // the gain over the lease repays its restart; what it frees is handed out.
  if (options_.move_to_faster && free.total_free() > 0) {
    bool moved = false;
    for (std::size_t q = 0; q < out.size(); ++q) {
      Assignment& a = out[q];
      // Kept jobs within their share (a leftover's charge depends on where it is).
      const JobView& v = view[position_of_out[q]];
      if (entity_of_out[q] == n || !v.running || finishing[position_of_out[q]]) continue;
      const std::span<const DeviceRef> held_now = devices_of(position_of_out[q]);
      if (!std::equal(a.devices.begin(), a.devices.end(), held_now.begin(), held_now.end()))
        continue;
      bool room = false;  // a type it runs on with its gang free (else the job is not read)
      for (std::size_t t = 0; t < k && !room; ++t)
        room = (!type_bits || (v.types >> t & 1)) && free.can_hold(t, v.workers);
      if (!room) continue;
      const Job& j = s.jobs[a.job];
      std::size_t best_type = k;
      double best = j.rate;
      for (std::size_t t = 0; t < k; ++t) {
        if (!j.runs_on(t) || !free.can_hold(t, j.workers)) continue;
        const double r = rate_on(j, free, t);
        if (r * (lease - j.restart_overhead_s) > best * lease * (1 + 1e-9)) {
          best = r * (lease - j.restart_overhead_s) / lease;
          best_type = t;
        }
      }
      if (best_type == k) continue;
      const std::size_t e = entity_of_out[q];
      std::vector<DeviceRef> devices = free.pick(best_type, j.workers);
      for (DeviceRef d : a.devices) --held(e)[s.type_of(d)];
      for (DeviceRef d : devices) ++held(e)[s.type_of(d)];
      free.give_back(a.devices);
      a.devices = std::move(devices);
      moved = true;
    }
    if (moved) hand_out_leftovers();
  }

  // 6. Credits from what each entity actually held.
  const double quantum_rounds = lease > 0 ? options_.quantum_s / lease : 1.0;
  std::vector<std::size_t> by_key(n);  // entities by key (mostly given so)
  std::iota(by_key.begin(), by_key.end(), 0);
  if (!std::is_sorted(by_key.begin(), by_key.end(), [&](std::size_t a, std::size_t b) {
        return entities[a].key < entities[b].key;
      }))
    std::stable_sort(by_key.begin(), by_key.end(), [&](std::size_t a, std::size_t b) {
      return entities[a].key < entities[b].key;
    });
  old_keys_.swap(dev_keys_);  // kept with their capacity, for credits_steady_
  old_dev_.swap(dev_);
  dev_keys_.clear();
  dev_.clear();
  for (std::size_t e : by_key) {
    const RoundingEntity& ent = entities[e];
    if (!dev_keys_.empty() && dev_keys_.back() == ent.key) continue;  // a key once, the first
    const double cap = (ideal_total[e] + largest_gang_[e]) * std::max(1.0, quantum_rounds);
    dev_keys_.push_back(ent.key);
    for (std::size_t t = 0; t < k; ++t)
      dev_.push_back(std::clamp(want(e)[t] - held(e)[t], -cap, cap));
  }
  credits_steady_ = dev_keys_ == old_keys_ && dev_ == old_dev_;
  in_share_ = std::move(next_in_share);
  waiting_for_capacity_ = std::move(next_waiting);
  fresh_ = false;
  return out;
}

void OefRoundingPlacer::charge(std::uint64_t key, std::size_t type, double gpu_rounds) {
  const auto it = std::lower_bound(dev_keys_.begin(), dev_keys_.end(), key);
  if (it == dev_keys_.end() || *it != key) return;
  const std::size_t k = dev_.size() / dev_keys_.size();
  if (type < k) dev_[static_cast<std::size_t>(it - dev_keys_.begin()) * k + type] -= gpu_rounds;
}

}  // namespace fairgpu::placement
