// `tiresias`: Tiresias-L, discretised two-dimensional least-attained-service
// (Gu et al., NSDI 2019, §4.1-4.2; the "Tiresias-L" baseline of Astraea
// §6.1.5).
//
// A job's attained service is two-dimensional: GPUs × time it has run (its
// GPU-seconds held). Jobs sit in K priority queues split at thresholds of
// attained service (--tiresias-thresholds, default one split at 1 GPU-hour:
// two queues); a job moves down when it crosses a threshold. Within a queue
// jobs run first come, first served (by arrival). At each scheduling point
// the decidable jobs (queued, or running with an ended lease) are granted in
// queue order while their gang fits, lower queues filling what is left (work
// conserving); a running job not granted is preempted at its lease end.
// Starvation guard (§4.2): a job that has waited longer than PROMOTEKNOB ×
// its last run (--tiresias-promote, default 8) goes back to the highest
// queue — its attained service is counted from then, so it stays there until
// it crosses the first threshold again.
//
// Where the papers are silent: leases are 900 s with a point every 10 s (the
// setting Astraea compared under), so preemption happens at lease ends; a job
// that never ran is never "starved" (it is in the top queue already).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "placement/gang_round.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy {
namespace {

class Tiresias final : public TimeSharingPolicy {
 public:
  explicit Tiresias(const PolicyOptions& o)
      : TimeSharingPolicy(o), thresholds_(o.numbers("thresholds")), promote_(o.number("promote")) {}

  // With no job queued every decidable job is granted, and base_ changes
  // only for queued jobs.
  bool grants_all_when_none_waits() const override { return true; }

  RoundPlan plan(const SchedulerState& s) override {
    placement::GangRound round = gang_round(s);
    if (!round.worth_planning()) return {};
    if (base_.size() < s.jobs.size()) base_.resize(s.jobs.size(), 0.0);

    struct Entry {
      std::size_t queue, job;
    };
    std::vector<Entry> order;
    order.reserve(round.decidable().size());
    for (std::size_t i : round.decidable()) {
      const Job& j = s.jobs[i];
      const double attained = attained_now(s, j);
      if (j.state == JobState::kQueued && !std::isnan(j.record.first_start)) {
        const double last_run = j.last_stop - j.run_start;
        if (s.now - j.last_stop > promote_ * last_run) base_[i] = attained;  // promoted
      }
      const double service = attained - base_[i];
      const auto queue = static_cast<std::size_t>(
          std::upper_bound(thresholds_.begin(), thresholds_.end(), service) - thresholds_.begin());
      order.push_back({queue, i});
    }
    // decidable() is in arrival order: a stable sort by queue is FIFO inside.
    std::stable_sort(order.begin(), order.end(),
                     [](const Entry& a, const Entry& b) { return a.queue < b.queue; });
    const double lease_end = s.now + lease();
    for (const Entry& e : order) round.grant(e.job, lease_end);
    return round.plan();
  }

 private:
  std::vector<double> thresholds_;
  double promote_;
  std::vector<double> base_;  // attained service when last promoted, by job
};

}  // namespace

std::vector<OptionSpec> TiresiasKeys() {
  auto keys = time_sharing_keys();
  keys.push_back(list_option("thresholds", "3600",
                             "attained GPU-seconds between its queues, '/'-separated, ascending "
                             "(e.g. 3600/7200)",
                             0.0, true, true));
  keys.push_back(number_option("promote", 8.0,
                               "promote a job waiting longer than this multiple of its last run",
                               0.0, std::numeric_limits<double>::infinity(), true));
  return keys;
}

std::unique_ptr<RoundPolicy> NewTiresiasPolicy(const PolicyOptions& options) {
  return std::make_unique<Tiresias>(options);
}

}  // namespace fairgpu::policy
