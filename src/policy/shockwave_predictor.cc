// Shockwave's regime predictor (policy/shockwave_predictor.h).
#include "policy/shockwave_predictor.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "policy/time_sharing.h"

namespace fairgpu::policy::shockwave {

std::vector<RegimeForecast> predict_restatement(const Observation& o) {
  const double left = std::max(0.0, o.total_epochs - o.epochs_done);
  if (left <= 0.0 || o.regime_batch.empty()) return {};
  const int k = static_cast<int>(o.regime_starts.size());  // current regime, from 1
  const int current = o.regime_batch.back();
  if (k >= o.max_regimes) return {{current, left}};
  const int rest = o.max_regimes - k + 1;  // the current and the later regimes
  const double share = left / rest;
  std::vector<RegimeForecast> out{{current, share}};
  const int bs0 = o.regime_batch.front();
  int bs = current;
  for (int r = 1; r < rest; ++r) {
    bs = next_configuration(o.mode, o.model, bs0, bs);
    out.push_back({bs, share});
  }
  return out;
}

std::vector<RegimeForecast> predict_artifact(const std::vector<int>& schedule, double epochs_done) {
  const auto epochs = static_cast<double>(schedule.size());
  const double progress = std::floor(epochs_done + 1e-9);
  if (schedule.empty() || progress >= epochs) return {};
  std::map<int, double> alpha;  // by batch size, ascending (the code sorts them)
  for (int b : schedule) alpha.emplace(b, 0.0);
  for (auto& [b, a] : alpha) a = epochs / static_cast<double>(alpha.size());
  const auto observed = static_cast<std::size_t>(progress) + 1;  // the epoch in progress too
  for (std::size_t e = 0; e < observed && e < schedule.size(); ++e) alpha[schedule[e]] += 1.0;
  double sum = 0.0;
  for (const auto& [b, a] : alpha) sum += a;
  std::map<int, double> rebased;
  for (const auto& [b, a] : alpha) rebased[b] = epochs * a / sum;
  for (std::size_t e = 0; e < observed && e < schedule.size(); ++e)
    if (rebased[schedule[e]] >= 1.0) rebased[schedule[e]] -= 1.0;
  double total = 0.0;
  for (const auto& [b, r] : rebased) total += r;
  const double remaining = epochs - progress;
  const double inflated = std::max(remaining, std::floor(total + 1.0));
  std::vector<RegimeForecast> out;
  for (const auto& [b, r] : rebased) out.push_back({b, r * remaining / inflated});
  return out;
}

Observation observe(const SchedulerState& s, const Job& j) {
  Observation o;
  o.mode = j.mode;
  o.model = j.model;
  o.total_epochs = j.work;
  o.epochs_done = done_now(s, j);
  o.regime_starts = j.regime_starts;
  for (std::size_t r = 0; r <= j.regime && r < j.regimes.size(); ++r)
    o.regime_batch.push_back(j.regimes[r].batch_size);
  // K: the number of regimes of the profiled schedule (the authors' oracle K,
  // spec §2.3's default when the trace supplies a schedule), never fewer
  // than those already seen.
  o.max_regimes =
      std::max<int>(static_cast<int>(j.regimes.size()), static_cast<int>(o.regime_starts.size()));
  return o;
}

std::vector<int> profiled_schedule(const Job& j) {
  std::vector<int> out;
  double start = 0.0;
  for (const Job::Regime& r : j.regimes) {
    for (double e = start; e < r.end_epoch - 1e-9; e += 1.0) out.push_back(r.batch_size);
    start = r.end_epoch;
  }
  return out;
}

}  // namespace fairgpu::policy::shockwave
