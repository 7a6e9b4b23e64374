// Batch-size regimes in the live manager (issue 14 item 5, Shockwave live;
// Shockwave §2, §5): a job reports the batch size it trains at with its
// progress (docs/live-protocol.md, the progress file and `batch_size`), so
// the manager learns of a regime change when the job reaches it, as the
// simulator reveals it at the epoch boundary (no peeking at the schedule).
//
// Where the papers are silent: a live job's future regimes are unknown (no
// profiled schedule is submitted), so the policy sees a regime change as the
// job type "<model> (batch size b)" of the profiles (its rates), from the
// next scheduling point, when the profiles have it on every ready GPU type;
// otherwise the change is recorded only. Progress stays in iterations.
// The regime history is kept in memory (a restarted manager begins it again
// from the next report).
#include <fmt/format.h>

#include "fairgpu/adaptation.h"
#include "live/manager.h"

namespace fairgpu::live {

void Manager::note_batch_size(JobEntry& e, std::int64_t batch, double iterations, double t) {
  if (batch == e.batch_size) return;
  if (e.batch_size != 0) ++regime_changes_;
  e.batch_size = batch;
  e.regimes.push_back({{"batch_size", batch}, {"iteration", iterations}, {"at", t}});
  const auto named = split_job_type(e.s.job_type);
  if (!named) return;
  std::string type = batch_job_type(named->model, static_cast<int>(batch));
  if (type == e.s.job_type) type.clear();
  if (type == e.regime_type || (!type.empty() && !fully_profiled(e.s.tenant, type))) return;
  e.regime_type = type;
  rebuild_needed_ = true;  // the policy sees the job's new rates
}

void Manager::add_regimes_json(const JobEntry& e, nlohmann::json& j) const {
  j["batch_size"] = e.batch_size > 0 ? nlohmann::json(e.batch_size) : nlohmann::json(nullptr);
  j["regimes"] = e.regimes;
  j["regime_job_type"] =
      e.regime_type.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.regime_type);
}

RoundPolicyOptions Manager::live_policy_options(RoundPolicyOptions o) {
  o.settings.insert(o.settings.begin(), {"", "solve", "async"});
  return o;
}

}  // namespace fairgpu::live
