// `gandiva-fair:mechanism=stride` — Gandiva_fair's stride scheduling
// (Chaudhary et al., EuroSys 2020, §4.1) at job level with tickets = gang
// size: the baseline Shockwave compared against (NSDI'23 §8.2,
// `gandiva_fair` with tickets equal to the scale factor). The default
// `gandiva-fair` (gandiva_fair.cc) is the tenant-level trading version.
//
// Stride scheduling in GPU-rounds: job j holds t_j = workers_j tickets; a
// round it runs uses workers_j GPU-rounds, so its pass advances by
// workers_j / t_j = 1. Every job thus gets the same number of rounds and GPU
// time in proportion to its tickets (a pass advancing by 1 / t_j per round
// would give a job GPU time in proportion to t_j squared). Each scheduling
// point grants leases to the jobs with the lowest pass first whose gang fits
// (ties: earlier arrival), consolidated by GangRound; a running job on its
// own free devices is renewed in place. A job that arrives (or wakes) starts
// at the current minimum pass of the active jobs, so it cannot claim the
// rounds it was absent for (the global-pass rule of stride scheduling).
// Where Gandiva_fair migrates jobs between servers to balance load, fairgpu's
// placer packs each round afresh; there is no trading between GPU types.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "placement/gang_round.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy {
namespace {

class GandivaStride final : public RoundPolicy {
 public:
  explicit GandivaStride(const PolicyOptions& o)
      : name_(o.full_name()),
        interval_(o.number("round")),
        gang_round_{o.number("spread_min"), o.number("spread_wait")} {}
  std::string_view name() const override { return name_; }
  double interval() const override { return interval_; }

  // Stable while no job waits and no gang is spread: every decidable job is
  // granted on its own devices at every point and every active job's pass
  // grows by 1, which keeps their order and the newcomers' (they join at the
  // smallest pass): skipped points change no decision. Else as a gang policy
  // whose plan is {} while nothing is worth planning.
  Stability stability(const SchedulerState& s) const override {
    if (TimeSharingPolicy::none_waits_unspread(s))
      return {std::numeric_limits<double>::infinity(), interval_, kUnset};
    return gang_stability(s, gang_round_, kUnset);
  }

  RoundPlan plan(const SchedulerState& s) override {
    placement::GangRound round(s, gang_round_);
    if (!round.worth_planning()) return {};
    if (pass_.size() < s.jobs.size()) pass_.resize(s.jobs.size(), -1.0);
    double global = std::numeric_limits<double>::infinity();
    for (std::size_t i : s.active)
      if (pass_[i] >= 0) global = std::min(global, pass_[i]);
    if (!std::isfinite(global)) global = 0.0;
    for (std::size_t i : s.active)
      if (pass_[i] < 0) pass_[i] = global;  // newcomers join at the global pass
    std::vector<std::size_t> order = round.decidable();
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return pass_[a] < pass_[b]; });
    const double lease_end = s.now + interval_;
    for (std::size_t i : order)
      if (round.grant(i, lease_end)) pass_[i] += 1.0;  // workers GPU-rounds / workers tickets
    return round.plan();
  }

 private:
  std::string name_;
  double interval_;
  placement::GangRoundOptions gang_round_;
  std::vector<double> pass_;  // by job index; < 0: not seen yet
};

}  // namespace

std::unique_ptr<RoundPolicy> NewGandivaStridePolicy(const PolicyOptions& options) {
  return std::make_unique<GandivaStride>(options);
}

}  // namespace fairgpu::policy
