// What the time-sharing policies (astraea, themis, tiresias, fifo, yarn-cs,
// hived, allox, drf, ...) share: their lease and interval defaults and a
// job's service up to the scheduling point.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>
#include <string>
#include <utility>
#include <string_view>

#include "fairgpu/policy_options.h"
#include "fairgpu/scheduler.h"
#include "placement/gang_round.h"
#include "placement/oef_rounding.h"

namespace fairgpu::policy {

// Astraea's evaluation setting (§6.1.3): 900 s lease terms, a scheduling
// point every 10 s. Every time-sharing policy defaults to it, so a comparison
// differs only in which jobs get the leases.
inline constexpr double kDefaultLeaseS = 900.0;
inline constexpr double kDefaultIntervalS = 10.0;

// A job's GPU-seconds held up to state.now (Astraea eq. 2), restart overhead
// included. The simulator settles running jobs at every scheduling point;
// this also covers an executor that does not.
inline double attained_now(const SchedulerState& s, const Job& j) {
  double a = j.record.attained_gpu_seconds;
  if (j.state == JobState::kRunning && s.now > j.settled_at) a += j.workers * (s.now - j.settled_at);
  return a;
}

// Iterations done up to state.now.
inline double done_now(const SchedulerState& s, const Job& j) {
  double d = j.done;
  if (j.state == JobState::kRunning && s.now > j.settled_at)
    d += j.rate * std::max(0.0, (s.now - j.settled_at) - j.overhead_left);
  return std::min(d, j.work);
}

// The keys every time-sharing policy declares (its file adds its own):
// level (job only: they decide job by job), round and lease.
// spread_min and spread_wait: placement that follows rates
// (placement::GangRoundOptions); spread_min as the OEF placer's, spread_wait
// 2700 s (the share policies' was measured on their placer: 5400 s).
inline constexpr double kTimeSharingSpreadWaitS = 2700.0;
inline std::vector<OptionSpec> time_sharing_keys(double round_s = kDefaultIntervalS) {
  return {choice_option("level", "job", "job only: the policy decides job by job", {"job"}),
          number_option("round", round_s, "seconds between scheduling points", 0.0,
                        std::numeric_limits<double>::infinity(), true),
          number_option("lease", kDefaultLeaseS, "lease term in seconds (Astraea §6.1.3)", 0.0,
                        std::numeric_limits<double>::infinity(), true),
          number_option("spread_min", placement::RoundingOptions{}.spread_min,
                        "a gang waits (up to spread_wait) rather than run spread below this "
                        "fraction of its one-node rate (0: takes any placement)",
                        0.0, 1.0),
          number_option("spread_wait", kTimeSharingSpreadWaitS,
                        "seconds a gang waits for a placement at spread_min before it takes any",
                        0.0, std::numeric_limits<double>::infinity())};
}

// Event-cost simulation (RoundPolicy::stability) of a gang policy whose
// plan() returns {} first thing when GangRound::worth_planning() is false:
// nothing to decide, absent arrivals and completions, until the first
// running lease ends (lease_ended() allows 1e-9: the margin keeps `until`
// below it). With `renewal_s` (a policy that renews every ended lease on its
// own devices to now + renewal_s before it looks at the queue): stable
// across lease ends too while no job waits or no GPU is free beyond the
// running jobs', unless a running gang is spread over nodes (GangRound may
// move it onto one node at its renewal).
inline RoundPolicy::Stability gang_stability(const SchedulerState& s,
                                             placement::GangRoundOptions options,
                                             double renewal_s) {
  const placement::GangRound round(s, options);
  if (!std::isnan(renewal_s)) {
    bool queued = false;
    for (std::size_t i : s.active) queued |= s.jobs[i].state == JobState::kQueued;
    int free = s.model->total_gpus;
    for (int r : s.reserved) free -= r;
    bool spread = false;
    for (std::size_t i : s.running) {
      const Job& j = s.jobs[i];
      free -= static_cast<int>(j.devices.size());
      for (DeviceRef d : j.devices) spread |= d.node != j.devices.front().node;
    }
    if ((!queued || free == 0) && !spread)
      return {std::numeric_limits<double>::infinity(), renewal_s, kUnset};
  }
  if (round.worth_planning()) return {};
  double first = std::numeric_limits<double>::infinity();
  for (std::size_t i : s.running) first = std::min(first, s.jobs[i].lease_end);
  return {first - 1e-6, std::numeric_limits<double>::quiet_NaN(), kUnset};
}

// Name (the full specifier), level "job", interval and lease (keys round
// and lease). Stable (stable_until) while nothing is worth planning: every
// subclass's plan() returns {} then before it changes anything of its own
// (one that does not says so by overriding stable_until).
class TimeSharingPolicy : public RoundPolicy {
 public:
  explicit TimeSharingPolicy(const PolicyOptions& o)
      : name_(o.full_name()),
        interval_(o.number("round")),
        lease_(o.number("lease")),
        gang_round_{o.number("spread_min"), o.number("spread_wait")} {}
  std::string_view name() const override { return name_; }
  double interval() const override { return interval_; }
  double lease() const { return lease_; }
  // This point's round, with the policy's placement options.
  placement::GangRound gang_round(const SchedulerState& s) const {
    return placement::GangRound(s, gang_round_);
  }
  Stability stability(const SchedulerState& s) const override {
    if (grants_all_when_none_waits() && none_waits_unspread(s))
      return {std::numeric_limits<double>::infinity(), lease(), kUnset};
    return gang_stability(s, gang_round_, renews_first() ? lease() : kUnset);
  }
  // Whether plan() grants every decidable job (kBestType or its own type)
  // when none is queued, and changes nothing of its own then: its plan is
  // the renewals of the ended leases in place (GangRound keeps a running
  // job's devices when no start took them) to now + lease(), at every point
  // until an event, so it is stable while no job waits and no gang is
  // spread (GangRound may move one onto one node).
  virtual bool grants_all_when_none_waits() const { return false; }
  static bool none_waits_unspread(const SchedulerState& s) {
    for (std::size_t i : s.active)
      if (s.jobs[i].state == JobState::kQueued) return false;
    for (std::size_t i : s.running) {
      const Job& j = s.jobs[i];
      for (DeviceRef d : j.devices)
        if (d.node != j.devices.front().node) return false;
    }
    return true;
  }
  // Whether plan() renews every ended lease on its own devices to now +
  // lease() first and only then looks at queued jobs (non-preemptive), so
  // with none queued or no GPU free the plan is those renewals.
  virtual bool renews_first() const { return false; }

 private:
  std::string name_;
  double interval_, lease_;
  placement::GangRoundOptions gang_round_;
};

}  // namespace fairgpu::policy
