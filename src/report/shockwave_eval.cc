// Shockwave's evaluation figures (fairgpu/shockwave_eval.h).
#include "fairgpu/shockwave_eval.h"

#include <algorithm>
#include <cmath>

#include "fairgpu/sim_report.h"
#include "policy/shockwave_planner.h"
#include "policy/shockwave_predictor.h"

namespace fairgpu {
namespace {

FtfFigures figures(const SimResult& r, double contention) {
  FtfFigures f;
  f.contention = contention;
  std::vector<double> rhos;
  for (const JobRecord& j : r.jobs) {
    if (std::isnan(j.finish) || !(j.exclusive_s > 0)) continue;
    const double n = std::isnan(contention) ? j.contention_avg : contention;
    rhos.push_back(job_jct(j) / (j.exclusive_s * n));
  }
  f.jobs = static_cast<int>(rhos.size());
  if (rhos.empty()) return f;
  double sum = 0.0;
  int over1 = 0, over105 = 0, over11 = 0;
  f.worst_rho = 0.0;
  for (double rho : rhos) {
    sum += rho;
    f.worst_rho = std::max(f.worst_rho, rho);
    over1 += rho > 1.0;
    over105 += rho > 1.05;
    over11 += rho > 1.1;
  }
  const auto n = static_cast<double>(rhos.size());
  f.avg_rho = sum / n;
  f.unfair_1 = over1 / n;
  f.unfair_105 = over105 / n;
  f.unfair_11 = over11 / n;
  return f;
}

}  // namespace

FtfFigures ftf_static_figures(const SimResult& r) {
  const double n = std::max(1.0, static_cast<double>(r.jobs.size()) / std::max(1, r.total_gpus()));
  return figures(r, n);
}

FtfFigures ftf_time_averaged_figures(const SimResult& r) { return figures(r, kUnset); }

PredictorAccuracy predictor_accuracy(const ClusterModel& model, const Workload& workload,
                                     bool artifact) {
  PredictorAccuracy out;
  SchedulerState s = make_scheduler_state(model, workload);
  double acc_sum = 0.0, err_sum = 0.0;
  long acc_n = 0;
  for (Job& j : s.jobs) {
    if (!j.adaptive() || j.regimes.size() < 2) continue;
    ++out.jobs;
    // Seconds per epoch of each regime on the job's fastest type.
    const std::size_t f = policy::shockwave::fastest_type(j);
    std::vector<double> tau;
    for (const Job::Regime& r : j.regimes) tau.push_back(1.0 / r.rate_best[f]);
    const auto epochs = static_cast<int>(std::lround(j.work));
    std::vector<double> true_left(static_cast<std::size_t>(epochs) + 1, 0.0);
    {
      std::size_t reg = j.regimes.size();
      for (int e = epochs - 1; e >= 0; --e) {
        while (reg > 0 && j.regimes[reg - 1].end_epoch > e) --reg;  // regime of epoch e
        true_left[static_cast<std::size_t>(e)] =
            true_left[static_cast<std::size_t>(e) + 1] + tau[reg];
      }
    }
    // Replay: the job "runs" alone; at each epoch boundary it is queued
    // with `done` epochs, in the regime that epoch belongs to.
    j.state = JobState::kQueued;
    double predicted_len = kUnset;  // of the current regime, when it began
    std::size_t regime = 0;
    j.regime_starts.assign(1, 0.0);
    enter_regime(j, 0);
    for (int e = 0; e < epochs; ++e) {
      if (e >= j.regimes[regime].end_epoch - 1e-9) {
        // Regime `regime` ended at epoch e.
        const double true_len = j.regimes[regime].end_epoch - j.regime_starts.back();
        if (!std::isnan(predicted_len)) {
          err_sum += std::abs(predicted_len - true_len) / j.work;
          ++out.regime_ends;
        }
        ++regime;
        enter_regime(j, regime);
        j.regime_starts.push_back(e);
        predicted_len = kUnset;
      }
      j.done = e;
      const double r_hat = policy::shockwave::predicted_remaining_s(s, j, artifact, false);
      const double r_true = true_left[static_cast<std::size_t>(e)];
      acc_sum += std::max(0.0, 1.0 - std::abs(r_hat - r_true) / r_true);
      ++acc_n;
      if (std::isnan(predicted_len)) {
        // The predicted length of the regime just begun: its epochs so far
        // plus what the predictor gives the current regime.
        if (artifact) {
          const auto fc =
              policy::shockwave::predict_artifact(policy::shockwave::profiled_schedule(j), e);
          for (const auto& r : fc)
            if (r.batch_size == j.regimes[regime].batch_size) predicted_len = r.epochs;
        } else {
          const auto fc = policy::shockwave::predict_restatement(policy::shockwave::observe(s, j));
          predicted_len = fc.empty() ? 0.0 : fc.front().epochs;
        }
        if (std::isnan(predicted_len)) predicted_len = 0.0;
      }
    }
    // The last regime's end is the job's end.
    const double true_len = j.regimes[regime].end_epoch - j.regime_starts.back();
    if (!std::isnan(predicted_len)) {
      err_sum += std::abs(predicted_len - true_len) / j.work;
      ++out.regime_ends;
    }
    j.state = JobState::kFuture;
  }
  if (acc_n > 0) out.runtime_accuracy = acc_sum / static_cast<double>(acc_n);
  if (out.regime_ends > 0) out.regime_error = err_sum / out.regime_ends;
  return out;
}

}  // namespace fairgpu
