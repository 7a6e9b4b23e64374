// Share policies as round policies (DESIGN §3-§4): the policy's fractional
// allocation is recomputed only when something it depends on changed (an
// arrival, a completion), and turned into whole GPUs every round by
//   - tenant level (OEF's way): entities are tenants, one virtual tenant per
//     job type (OEF §4.2.4), allocated by speedups and weights as in the paper;
//     the OEF rounding placer does the rest (OEF §4.3, §6.1.3), handing GPUs a
//     tenant cannot use to others. With tenant_demands each tenant's demand is
//     the GPUs its active jobs can use (the policies' demand-aware variants:
//     no share goes where it cannot be used, at the price of a re-solve on
//     most arrivals and completions: 100x the solve time and more at 100
//     tenants);
//   - job level (Gavel's way): one entity per active job, speedups of its
//     whole gang, demand = its workers (so sum_t x_jt / workers <= 1 is its
//     time fractions), weight = its priority weight; Gavel's priority rounds.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <memory>
#include <string>
#include <vector>

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
                   double interval, bool tenant_demands)
      : name_(std::move(name)),
        share_(std::move(share)),
        tenant_level_(tenant_level),
        tenant_demands_(tenant_demands),
        interval_(interval) {}

  std::string_view name() const override { return name_; }
  std::string_view level() const override { return tenant_level_ ? "tenant" : "job"; }
  double interval() const override { return interval_; }

  RoundPlan plan(const SchedulerState& s) override {
    RoundPlan plan;
    if (s.changed || !solved_) {
      ShareProblem previous = std::move(problem_);
      std::vector<double> previous_demand = std::move(demand_);
      tenant_level_ ? build_tenant_problem(s) : build_job_problem(s);
      if (!solved_ || !allocation_still_holds(previous, previous_demand)) {
        solve();
        plan.recomputed = true;
      } else {
        for (std::size_t t = 0; t < problem_.tenants.size(); ++t)
          problem_.tenants[t].demand = capped_[t] ? demand_[t] : kNoDemand;
      }
      solved_ = true;
      if (!tenant_level_) x_jobs_ = per_job_allocation();
    }
    plan.estimated_throughput = estimated_;
    const double lease_end = s.now + interval_;
    if (tenant_level_) {
      for (std::size_t e = 0; e < entities_.size(); ++e)
        for (std::size_t t = 0; t < x_.cols(); ++t)
          entities_[e].ideal[t] = std::max(0.0, x_(e, t));
      plan.run = placer_.place(s, entities_, lease_end);
    } else {
      plan.run = placement::gavel_priority_round(s, jobs_, x_jobs_, lease_end);
    }
    return plan;
  }

 private:
  // Demands by active set. A tenant's demand (the GPUs its active jobs can
  // use, demand_) is imposed only on tenants whose allocation would exceed
  // it (capped_): solve with the tenants capped so far, cap those that got
  // more than they can use, repeat. For the LP policies (everything but
  // oef-coop) this is exact: an optimum over a larger set that lies in the
  // smaller one is its optimum, lexicographic max-min included. For oef-coop
  // an uncapped tenant values bundles uncapped, a stricter envy test than its
  // capped valuation, so the result is envy-free and within demands but may
  // fall short of the fully demand-aware optimum. Few tenants are capped
  // under load, and an uncapped tenant's demand changing does not call for a
  // re-solve (allocation_still_holds).
  void solve() {
    const std::size_t n = problem_.tenants.size();
    // A job can never use more than its gang: at job level every cap holds.
    capped_.assign(n, !tenant_level_);
    if (problem_.num_entities() == 0) {
      x_ = Matrix();
      estimated_ = 0.0;
      return;
    }
    for (int round = 0;; ++round) {
      for (std::size_t t = 0; t < n; ++t)
        problem_.tenants[t].demand = capped_[t] ? demand_[t] : kNoDemand;
      x_ = share_->allocate(problem_);
      bool over = false;
      for (std::size_t t = 0; t < n; ++t) {
        if (capped_[t] || allocated(t) <= demand_[t] * (1 + 1e-9) + 1e-9) continue;
        capped_[t] = true;
        over = true;
      }
      if (!over) break;
      if (round == 8) {  // not settling: cap everyone (always within demands)
        std::fill(capped_.begin(), capped_.end(), true);
        for (std::size_t t = 0; t < n; ++t) problem_.tenants[t].demand = demand_[t];
        x_ = share_->allocate(problem_);
        break;
      }
    }
    estimated_ = problem_.total_throughput(x_);
  }

  double allocated(std::size_t tenant) const {
    double sum = 0.0;
    for (std::size_t e : problem_.tenants[tenant].entities)
      for (std::size_t j = 0; j < problem_.num_types(); ++j) sum += x_(e, j);
    return sum;
  }

  // Whether x_ (solved for `previous`, with demands `previous_demand`) is
  // still the answer for problem_: the same tenants and entities, every
  // uncapped tenant still able to use what it holds, and every capped
  // tenant's demand unchanged or, where it changed, above every bundle the
  // tenant holds or compares (scaled to its weight) before and after, so it
  // binds no constraint at the optimum, the capped valuation of oef-coop's
  // envy rows included.
  bool allocation_still_holds(const ShareProblem& previous,
                              const std::vector<double>& previous_demand) const {
    const ShareProblem& p = problem_;
    if (p.num_entities() != previous.num_entities() || p.tenants.size() != previous.tenants.size())
      return false;
    for (std::size_t t = 0; t < p.tenants.size(); ++t)
      if (p.tenants[t].name != previous.tenants[t].name ||
          p.tenants[t].weight != previous.tenants[t].weight)
        return false;
    for (std::size_t e = 0; e < p.num_entities(); ++e) {
      const ShareEntity &a = p.entities[e], &b = previous.entities[e];
      if (a.name != b.name || a.speedup != b.speedup || a.weight != b.weight || a.tenant != b.tenant)
        return false;
    }
    double size_per_weight = -1.0;
    for (std::size_t t = 0; t < p.tenants.size(); ++t) {
      const double now_d = demand_[t], before_d = previous_demand[t];
      if (now_d == before_d) continue;
      if (!capped_[t]) {
        if (allocated(t) > now_d * (1 + 1e-9) + 1e-9) return false;
        continue;
      }
      if (size_per_weight < 0.0) {  // max_i |x_i| / w_i, once
        size_per_weight = 0.0;
        for (std::size_t i = 0; i < p.num_entities(); ++i) {
          double size = 0.0;
          for (std::size_t j = 0; j < p.num_types(); ++j) size += x_(i, j);
          size_per_weight = std::max(size_per_weight, size / p.entities[i].weight);
        }
      }
      for (std::size_t l : p.tenants[t].entities) {
        const double largest = size_per_weight * p.entities[l].weight;
        const double share = p.entities[l].weight / p.tenants[t].weight;
        const double margin = 1e-6 * std::max(1.0, largest);
        if (!(now_d * share > largest + margin && before_d * share > largest + margin))
          return false;
      }
    }
    return true;
  }

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
    demand_.clear();
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
      demand_.push_back(tenant_demands_ ? demand : kNoDemand);
      if (types.size() == 1)
        problem_.add_tenant(spec.name, types.front().second, spec.weight, demand);
      else
        problem_.add_tenant_job_types(spec.name, std::move(types), spec.weight, demand);
    }
  }

  // Job level: jobs of the same type, gang and weight are interchangeable,
  // so they form one entity of c times the weight and demand, and each gets
  // 1/c of its allocation. Exact for every LP policy here (the problem is
  // symmetric in them, so the equal split of any optimum is optimal; scaled
  // bundles and capped valuations are homogeneous, so envy and sharing
  // incentive read the same) and for Gandiva_fair's trading up to how it
  // pairs traders. It turns thousands of active jobs into a few dozen rows
  // (and spares CLP the degenerate LPs of many identical rows that trip its
  // internal assertion).
  void build_job_problem(const SchedulerState& s) {
    problem_ = empty_problem(s);
    demand_.clear();
    jobs_ = s.active;
    job_group_.assign(jobs_.size(), 0);
    group_size_.clear();
    std::map<std::tuple<std::size_t, int, double>, std::size_t> groups;
    for (std::size_t r = 0; r < jobs_.size(); ++r) {
      const Job& j = s.jobs[jobs_[r]];
      auto [it, fresh] = groups.try_emplace({j.job_type, j.workers, j.weight}, groups.size());
      job_group_[r] = it->second;
      if (fresh) group_size_.push_back(0);
      ++group_size_[it->second];
    }
    std::vector<std::size_t> first(group_size_.size(), jobs_.size());
    for (std::size_t r = jobs_.size(); r-- > 0;) first[job_group_[r]] = r;
    for (std::size_t g = 0; g < group_size_.size(); ++g) {
      const Job& j = s.jobs[jobs_[first[g]]];
      const double c = static_cast<double>(group_size_[g]);
      std::vector<double> w(j.rate_one_node.size());
      for (std::size_t t = 0; t < w.size(); ++t) w[t] = j.rate_best[t] / j.ref_rate;
      problem_.add_tenant(fmt::format("{}x{}", j.record.id, group_size_[g]), std::move(w),
                          c * j.weight, c * j.workers);
      demand_.push_back(c * j.workers);
    }
  }

  // Job level: each job's share of its group's allocation.
  Matrix per_job_allocation() const {
    Matrix x(jobs_.size(), x_.cols());
    for (std::size_t r = 0; r < jobs_.size(); ++r)
      for (std::size_t t = 0; t < x_.cols(); ++t)
        x(r, t) = x_(job_group_[r], t) / static_cast<double>(group_size_[job_group_[r]]);
    return x;
  }

  std::string name_;
  std::unique_ptr<SharePolicy> share_;
  bool tenant_level_;
  bool tenant_demands_;
  double interval_;
  bool solved_ = false;
  ShareProblem problem_;
  std::vector<double> demand_;  // per problem tenant: GPUs its active jobs can use
  std::vector<bool> capped_;    // per problem tenant: its demand is imposed on the policy
  Matrix x_;
  double estimated_ = 0.0;
  std::vector<placement::RoundingEntity> entities_;  // tenant level: rows of x_
  std::vector<std::size_t> jobs_;          // job level: the active jobs
  std::vector<std::size_t> job_group_;     // job level: row of x_ for each of jobs_
  std::vector<std::size_t> group_size_;    // job level: jobs per row of x_
  Matrix x_jobs_;                          // job level: one row per job of jobs_
  std::map<std::size_t, std::vector<double>> type_speedup_;
  placement::OefRoundingPlacer placer_;
};

}  // namespace

// The keys of every share policy run in rounds. A key of the placer or the
// rounds goes here (with its default, range and one line of help) and is read
// in NewShareRoundPolicy; `name` is the share policy's registered name, for
// keys or defaults that differ between them.
std::vector<OptionSpec> ShareRoundPolicyKeys(const std::string& name) {
  // Round lengths from the papers: OEF 5 min (§6.1.1), Gavel 6 min.
  const bool gavel = name == "gavel";
  return {
      choice_option("level", gavel ? "job" : "tenant",
                    "tenant (shares per tenant, OEF's placer) or job (Gavel's priority rounds)",
                    {"tenant", "job"}),
      number_option("round", gavel ? 360.0 : 300.0, "round length in seconds", 0.0,
                    std::numeric_limits<double>::infinity(), true),
      bool_option("demands", false,
                  "tenant level: cap a tenant's share by what its active jobs can use"),
  };
}

std::unique_ptr<RoundPolicy> NewShareRoundPolicy(const std::string& name,
                                                 const PolicyOptions& options) {
  const std::string& level = options.choice("level");
  const double round = options.number("round");
  auto share = name == "gavel" && level == "job" ? NewGavelSingleLevel() : make_share_policy(name);
  return std::make_unique<ShareRoundPolicy>(options.full_name(), std::move(share),
                                            level == "tenant", round, options.flag("demands"));
}

}  // namespace fairgpu::policy
