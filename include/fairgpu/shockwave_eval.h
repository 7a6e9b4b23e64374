// Shockwave's evaluation figures (NSDI'23 §8.2; specs/shockwave.md §4.3), so
// a comparison with its numbers is like for like, and the predictor's
// accuracy report (§5, Fig. 5).
#pragma once

#include <string>
#include <vector>

#include "fairgpu/scheduler.h"
#include "fairgpu/sim_result.h"

namespace fairgpu {

// Finish-time fairness over the finished jobs with their isolated run time
// (JobRecord::exclusive_s) and a contention N:
//   static:        N = max(1, jobs in the trace / GPUs), what the authors'
//                  figures use (Scheduler.get_finish_time_fairness);
//   time-averaged: N = JobRecord::contention_avg (Shockwave eq. 9, docs/design.md §6).
struct FtfFigures {
  int jobs = 0;                // finished jobs with an isolated run time
  double contention = kUnset;  // the static N, NaN for time-averaged
  double worst_rho = kUnset, avg_rho = kUnset;
  double unfair_1 = kUnset;    // share with ρ > 1.0
  double unfair_105 = kUnset;  // ρ > 1.05 (the authors' simulation figures)
  double unfair_11 = kUnset;   // ρ > 1.1 (their physical figures)
};
FtfFigures ftf_static_figures(const SimResult& result);
FtfFigures ftf_time_averaged_figures(const SimResult& result);

// Predictor accuracy on a workload (Fig. 5): every adaptive job is replayed
// epoch by epoch with its true schedule, and at each epoch boundary the
// predictor (paper restatement rule, or the artifact's count update) is
// asked for the remaining run time on the job's fastest type.
//   run-time accuracy = mean over jobs and epochs of max(0, 1 - |R̂ - R| / R);
//   regime-duration error = mean over regime ends of |predicted length of
//   the regime when it began - true length| / total epochs.
struct PredictorAccuracy {
  int jobs = 0, regime_ends = 0;
  double runtime_accuracy = kUnset;
  double regime_error = kUnset;
};
PredictorAccuracy predictor_accuracy(const ClusterModel& model, const Workload& workload,
                                     bool artifact);

}  // namespace fairgpu
