#include "placement/gang_round.h"

#include <algorithm>
#include <stdexcept>

#include "placement/devices.h"

namespace fairgpu::placement {

GangRound::GangRound(const SchedulerState& s, GangRoundOptions options)
    : s_(s), options_(options) {
  free_ = s.model->capacity;
  for (std::size_t t = 0; t < s.reserved.size(); ++t) free_[t] -= s.reserved[t];
  // O(active): the free count is capacity minus what unexpired leases hold.
  for (std::size_t i : s.running) {
    const Job& j = s.jobs[i];
    if (s.lease_ended(j)) {
      lease_ended_ = true;
      continue;
    }
    for (DeviceRef d : j.devices) --free_[s.type_of(d)];
  }
  for (std::size_t i : s.active) {
    const Job& j = s.jobs[i];
    if (j.state == JobState::kQueued) {
      decidable_.push_back(i);
      ++queued_;
    } else if (j.state == JobState::kRunning && s.lease_ended(j)) {
      decidable_.push_back(i);
    }
  }
}

bool GangRound::worth_planning() const { return lease_ended_ || (queued_ > 0 && total_free() > 0); }

int GangRound::total_free() const {
  int total = 0;
  for (int f : free_) total += f;
  return total;
}

bool GangRound::granted(std::size_t job) const { return job < granted_.size() && granted_[job]; }

bool GangRound::choose(std::size_t job, std::size_t type, Grant* out) const {
  const Job& j = s_.jobs[job];
  const std::size_t k = free_.size();
  out->job = job;
  out->keep = false;
  out->per_type.assign(k, 0);
  if (j.state == JobState::kRunning && s_.lease_ended(j) &&
      (type == kBestType || type == j.placement_type)) {
    std::vector<int> own(k, 0);
    for (DeviceRef d : j.devices) ++own[s_.type_of(d)];
    bool ok = true;
    for (std::size_t t = 0; t < k; ++t) ok &= own[t] <= free_[t];
    if (ok) {
      out->keep = true;
      out->per_type = std::move(own);
      return true;
    }
  }
  if (type != kBestType) {
    if (!j.runs_on(type) || free_[type] < j.workers || holds_out(j, type)) return false;
    out->per_type[type] = j.workers;
    return true;
  }
  // The rate the gang will get (issue 28: placement follows rates): on one
  // node where a node of the type has room now, else spread over nodes.
  auto rate = [&](std::size_t t) {
    if (j.workers <= 1) return j.rate_one_node[t];
    return free_devices().fits_one_node(t, j.workers) ? j.rate_one_node[t] : j.rate_spread[t];
  };
  // A type where it would run spread below spread_min is passed over (a
  // slower type's whole node may do); with room only there, it waits.
  std::size_t best = kBestType;
  double best_rate = 0.0;
  bool room_held_out = false;
  for (std::size_t t = 0; t < k; ++t) {
    if (!j.runs_on(t) || free_[t] < j.workers) continue;
    if (holds_out(j, t)) {
      room_held_out = true;
      continue;
    }
    const double r = rate(t);
    if (best == kBestType || r > best_rate) {
      best = t;
      best_rate = r;
    }
  }
  if (best != kBestType) {
    out->per_type[best] = j.workers;
    return true;
  }
  if (room_held_out) return false;
  // Spanning types only for a gang no single type could ever hold.
  if (s_.model->cluster.gangs_on_one_node || s_.model->cluster.gangs_spread_evenly) return false;
  int room = 0;
  for (std::size_t t = 0; t < k; ++t) {
    if (!j.runs_on(t)) continue;
    if (s_.model->capacity[t] >= j.workers) return false;
    room += free_[t];
  }
  if (room < j.workers) return false;
  int left = j.workers;
  for (std::size_t t = k; t-- > 0 && left > 0;) {  // fastest types first
    if (!j.runs_on(t)) continue;
    int n = std::min(left, free_[t]);
    out->per_type[t] = n;
    left -= n;
  }
  return true;
}

// Whether a gang granted `type` now would run spread below spread_min of its
// one-node rate there (rate_best is that rate where a node of the type can
// hold it) while it may still wait for one node.
bool GangRound::holds_out(const Job& j, std::size_t type) const {
  if (options_.spread_min <= 0.0 || j.workers <= 1 || s_.model->cluster.gangs_on_one_node)
    return false;
  if (free_devices().fits_one_node(type, j.workers)) return false;
  if (!(j.rate_spread[type] < options_.spread_min * j.rate_best[type])) return false;
  return j.state == JobState::kRunning || s_.now - j.last_stop < options_.spread_wait_s - 1e-9;
}

bool GangRound::fits(std::size_t job, std::size_t type) const {
  Grant g;
  return choose(job, type, &g);
}

bool GangRound::grant(std::size_t job, double lease_end, std::size_t type) {
  if (granted(job)) throw std::logic_error("a job granted twice in one round");
  Grant g;
  if (!choose(job, type, &g)) return false;
  g.lease_end = lease_end;
  for (std::size_t t = 0; t < free_.size(); ++t) free_[t] -= g.per_type[t];
  if (devices_) take_devices(g);
  if (granted_.size() <= job) granted_.resize(s_.jobs.size(), 0);
  granted_[job] = 1;
  grants_.push_back(std::move(g));
  return true;
}

FreeDevices& GangRound::free_devices() const {
  if (!devices_) {  // made for the first gang that asks; the grants so far taken
    devices_.emplace(s_);
    for (const Grant& g : grants_) take_devices(g);
  }
  return *devices_;
}

// What a grant holds, as plan() will place it (near enough for ranking rates:
// plan() places the starts in its own order).
void GangRound::take_devices(const Grant& g) const {
  if (g.keep) {
    devices_->take(s_.jobs[g.job].devices);
    return;
  }
  for (std::size_t t = g.per_type.size(); t-- > 0;)
    if (g.per_type[t] > 0) devices_->pick(t, g.per_type[t]);
}

void GangRound::renew_all(double lease_end) {
  for (std::size_t i : decidable_)
    if (s_.jobs[i].state == JobState::kRunning && !granted(i)) grant(i, lease_end);
}

RoundPlan GangRound::plan() const {
  RoundPlan p;
  if (grants_.empty()) return p;
  FreeDevices free(s_);
  p.run.reserve(grants_.size());
  auto place = [&](const Grant& g) {
    Assignment a{g.job, {}, g.lease_end};
    for (std::size_t t = free_.size(); t-- > 0;) {
      if (g.per_type[t] == 0) continue;
      std::vector<DeviceRef> d = free.pick(t, g.per_type[t]);
      // No node holds it whole (nor an even spread): it waits.
      if (d.empty() && (free.gangs_on_one_node() || free.gangs_spread_evenly())) return;
      if (d.empty()) throw std::logic_error("a granted gang does not fit its type");
      a.devices.insert(a.devices.end(), d.begin(), d.end());
    }
    p.run.push_back(std::move(a));
  };
  // Renewals keep their devices; a renewed gang spread over nodes moves onto
  // one node when one of its type has room now (a restart, but a spread gang
  // runs at the profile's cross-node rate for as long as it keeps renewing).
  std::vector<const Grant*> starts, spread_renewals;
  for (const Grant& g : grants_) {
    if (!g.keep) {
      starts.push_back(&g);
      continue;
    }
    const Job& j = s_.jobs[g.job];
    bool spread = false;
    for (DeviceRef d : j.devices) spread |= d.node != j.devices.front().node;
    if (spread && g.per_type[j.placement_type] == j.workers &&
        j.workers <= s_.model->largest_node[j.placement_type]) {
      spread_renewals.push_back(&g);  // after the consolidated renewals
      continue;
    }
    if (!free.take(j.devices)) throw std::logic_error("a renewed job's devices are not free");
    p.run.push_back({g.job, j.devices, g.lease_end});
  }
  // Spread renewals hold their own devices while each in turn looks for a
  // whole node (possibly one it partly holds), so none takes another's.
  for (const Grant* g : spread_renewals)
    if (!free.take(s_.jobs[g->job].devices))
      throw std::logic_error("a renewed job's devices are not free");
  for (const Grant* g : spread_renewals) {
    const Job& j = s_.jobs[g->job];
    free.give_back(j.devices);
    if (free.fits_one_node(j.placement_type, j.workers)) {
      place(*g);
    } else {
      free.take(j.devices);
      p.run.push_back({g->job, j.devices, g->lease_end});
    }
  }
  // Starts, more workers first so big gangs find whole nodes before small
  // ones fragment them (docs/design.md §4, as the OEF placer); best fit inside.
  std::stable_sort(starts.begin(), starts.end(), [&](const Grant* a, const Grant* b) {
    return s_.jobs[a->job].workers > s_.jobs[b->job].workers;
  });
  for (const Grant* g : starts) place(*g);
  return p;
}

}  // namespace fairgpu::placement
