// Share policies as round policies (DESIGN §3-§4): the policy's fractional
// allocation is recomputed only when something it depends on changed (an
// arrival, a completion), and turned into whole GPUs every round by
//   - tenant level (OEF's way): entities are tenants, one virtual tenant per
//     job type (OEF §4.2.4), with demand = the GPUs their active jobs can use
//     (so no share is handed to a tenant that cannot use it); the OEF rounding
//     placer does the rest (OEF §4.3, §6.1.3);
//   - job level (Gavel's way): one entity per active job, speedups of its
//     whole gang, demand = its workers (so sum_t x_jt / workers <= 1 is its
//     time fractions), weight = its priority weight; Gavel's priority rounds.
#include <cmath>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "fairgpu/input_error.h"
#include "fairgpu/policy.h"
#include "fairgpu/scheduler.h"
#include "placement/gavel_rounds.h"
#include "placement/oef_rounding.h"
#include "policy/round_policies.h"
#include "policy/share_policies.h"

namespace fairgpu::policy {
namespace {

class ShareRoundPolicy final : public RoundPolicy {
 public:
  ShareRoundPolicy(std::string name, std::unique_ptr<SharePolicy> share, bool tenant_level,
                   double interval)
      : name_(std::move(name)),
        share_(std::move(share)),
        tenant_level_(tenant_level),
        interval_(interval) {}

  std::string_view name() const override { return name_; }
  std::string_view level() const override { return tenant_level_ ? "tenant" : "job"; }
  double interval() const override { return interval_; }

  RoundPlan plan(const SchedulerState& s) override {
    RoundPlan plan;
    if (s.changed || !solved_) {
      tenant_level_ ? build_tenant_problem(s) : build_job_problem(s);
      x_ = problem_.num_entities() ? share_->allocate(problem_) : Matrix();
      estimated_ = problem_.num_entities() ? problem_.total_throughput(x_) : 0.0;
      solved_ = true;
      plan.recomputed = true;
    }
    plan.estimated_throughput = estimated_;
    const double lease_end = s.now + interval_;
    if (tenant_level_) {
      for (std::size_t e = 0; e < entities_.size(); ++e)
        for (std::size_t t = 0; t < x_.cols(); ++t)
          entities_[e].ideal[t] = std::max(0.0, x_(e, t));
      plan.run = placer_.place(s, entities_, lease_end);
    } else {
      plan.run = placement::gavel_priority_round(s, jobs_, x_, lease_end);
    }
    return plan;
  }

 private:
  const std::vector<double>& speedup_of(const SchedulerState& s, std::size_t job_type) {
    auto it = type_speedup_.find(job_type);
    if (it != type_speedup_.end()) return it->second;
    const auto& types = s.model->cluster.gpu_types;
    const JobTypeProfile& p = s.model->profiles.job_types[job_type];
    std::vector<double> w(types.size());
    for (std::size_t t = 0; t < types.size(); ++t)
      w[t] = p.rate(types[t], 1, false) / p.rate(types[0], 1, false);
    return type_speedup_.emplace(job_type, std::move(w)).first->second;
  }

  ShareProblem empty_problem(const SchedulerState& s) const {
    ShareProblem p;
    p.gpu_types = s.model->cluster.gpu_types;
    p.capacity.assign(s.model->capacity.begin(), s.model->capacity.end());
    return p;
  }

  void build_tenant_problem(const SchedulerState& s) {
    problem_ = empty_problem(s);
    entities_.clear();
    // tenant -> job type -> its active jobs, in index order (deterministic).
    std::map<std::size_t, std::map<std::size_t, std::vector<std::size_t>>> groups;
    for (std::size_t i : s.active) groups[s.jobs[i].tenant][s.jobs[i].job_type].push_back(i);
    for (auto& [tenant, by_type] : groups) {
      double demand = 0.0;
      std::vector<std::pair<std::string, std::vector<double>>> types;
      for (auto& [type, jobs] : by_type) {
        for (std::size_t i : jobs) demand += s.jobs[i].workers;
        types.emplace_back(s.model->profiles.job_types[type].name, speedup_of(s, type));
        placement::RoundingEntity ent;
        ent.key = static_cast<std::uint64_t>(tenant) * s.model->profiles.job_types.size() + type;
        ent.ideal.assign(problem_.num_types(), 0.0);
        ent.jobs = jobs;
        entities_.push_back(std::move(ent));
      }
      const TenantSpec& spec = s.tenants[tenant];
      if (types.size() == 1)
        problem_.add_tenant(spec.name, types.front().second, spec.weight, demand);
      else
        problem_.add_tenant_job_types(spec.name, std::move(types), spec.weight, demand);
    }
  }

  void build_job_problem(const SchedulerState& s) {
    problem_ = empty_problem(s);
    jobs_ = s.active;
    for (std::size_t i : jobs_) {
      const Job& j = s.jobs[i];
      std::vector<double> w(j.rate_one_node.size());
      for (std::size_t t = 0; t < w.size(); ++t) w[t] = j.rate_best[t] / j.ref_rate;
      problem_.add_tenant(j.record.id, std::move(w), j.weight, j.workers);
    }
  }

  std::string name_;
  std::unique_ptr<SharePolicy> share_;
  bool tenant_level_;
  double interval_;
  bool solved_ = false;
  ShareProblem problem_;
  Matrix x_;
  double estimated_ = 0.0;
  std::vector<placement::RoundingEntity> entities_;  // tenant level: rows of x_
  std::vector<std::size_t> jobs_;                    // job level: rows of x_
  std::map<std::size_t, std::vector<double>> type_speedup_;
  placement::OefRoundingPlacer placer_;
};

}  // namespace

std::unique_ptr<RoundPolicy> NewShareRoundPolicy(const std::string& name,
                                                 const RoundPolicyOptions& options) {
  // Round lengths from the papers: OEF 5 min (§6.1.1), Gavel 6 min.
  const bool gavel = name == "gavel";
  const std::string level = options.level.empty() ? (gavel ? "job" : "tenant") : options.level;
  if (level != "tenant" && level != "job")
    throw InputError("options", "level", fmt::format("'{}' is not tenant or job", level));
  double round = options.round_s > 0.0 ? options.round_s : (gavel ? 360.0 : 300.0);
  auto share = gavel && level == "job" ? NewGavelSingleLevel() : make_share_policy(name);
  return std::make_unique<ShareRoundPolicy>(name, std::move(share), level == "tenant", round);
}

}  // namespace fairgpu::policy
