// Shockwave's Bayesian predictor of a job's future batch-size regimes
// (Zheng et al., NSDI 2023, §5; specs/shockwave.md §2). It sees what a
// scheduler sees: the epochs done, the regimes entered so far and when
// (Job::regime_starts), the job's mode, model and initial batch size, and
// its total epochs N. It returns the posterior-mean trajectory of the
// remaining epochs, as (batch size, epochs) in order; the caller prices each
// with the profile's epoch time for that batch size.
#pragma once

#include <cstddef>
#include <vector>

#include "fairgpu/adaptation.h"
#include "fairgpu/scheduler.h"

namespace fairgpu::policy::shockwave {

struct RegimeForecast {
  int batch_size = 0;
  double epochs = 0.0;  // predicted epochs still to run in this regime
};

// What the predictor observes of a job.
struct Observation {
  AdaptationMode mode = AdaptationMode::kStatic;
  std::string model;
  int max_regimes = 1;                // K
  double total_epochs = 0.0;          // N
  double epochs_done = 0.0;           // F (fractional allowed)
  std::vector<double> regime_starts;  // epoch each observed regime began; first 0
  std::vector<int> regime_batch;      // its batch size (same length)
};

// The paper's restatement rule (§5): prior Dir(N/K, ..., N/K); when regime k
// ends after m_k epochs the posterior mean gives the finished regimes their
// observed lengths and the K - k regimes left S_k = (N - sum m) / (K - k)
// each. During regime k (the paper is silent; spec §2.3): with c epochs so
// far in it and R = N - F left, regime k is predicted to last c + R/(K-k+1)
// and each later one R/(K-k+1); from the K-th regime on, the current one
// takes all of R. Future configurations follow the mode (Accordion
// alternates small and large, GNS doubles up to the cap).
std::vector<RegimeForecast> predict_restatement(const Observation& o);

// The authors' code (spec §2.2, `variant=artifact`): categories are the
// distinct batch sizes of the job's whole profiled schedule (an oracle K),
// prior alpha_b = E/K, plus the count of each batch size in schedule[0..F]
// (the epoch in progress included); rebased E alpha_b / sum alpha, minus 1
// per observed epoch where that leaves >= 0, then scaled by
// (E - F) / max(E - F, int(sum + 1)). `schedule` is the per-epoch batch size.
std::vector<RegimeForecast> predict_artifact(const std::vector<int>& schedule, double epochs_done);

// The observation of a job in the scheduler state (epochs done up to now).
Observation observe(const SchedulerState& state, const Job& job);
// The job's per-epoch profiled schedule (the oracle the artifact reads).
std::vector<int> profiled_schedule(const Job& job);

}  // namespace fairgpu::policy::shockwave
