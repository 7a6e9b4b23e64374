// Share policies as round policies (docs/design.md §3-§4): the policy's fractional
// allocation is recomputed only when something it depends on changed (an
// arrival, a completion), and turned into whole GPUs every round by
//   - tenant level (OEF's way): entities are tenants, one virtual tenant per
//     job type (OEF §4.2.4). By default shares are demand- and gang-aware: an
//     entity's speedup vector is its active jobs' gang rates per GPU
//     (workers-weighted, so a tenant of 8-worker jobs plans with what its
//     gangs achieve, spread and all), and each row's demand is the GPUs its
//     active jobs can use, so no share goes where it cannot be used (at the
//     price of a re-solve on most arrivals and completions). With
//     tenant_demands off, shares follow the paper: 1-worker speedups of the
//     job type and weights only, GPUs a tenant cannot use handed to others
//     by the placer. The OEF rounding placer does the rest (OEF §4.3,
//     §6.1.3; placement/oef_rounding.cc);
//   - job level (Gavel's way): one entity per active job, speedups of its
//     whole gang, demand = its workers (so sum_t x_jt / workers <= 1 is its
//     time fractions), weight = its priority weight; Gavel's priority rounds
//     with backfilling.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/prefetch.h"
#include "core/task_thread.h"
#include "fairgpu/input_error.h"
#include "fairgpu/policy.h"
#include "fairgpu/scheduler.h"
#include "placement/gavel_rounds.h"
#include "placement/midround.h"
#include "placement/oef_rounding.h"
#include "policy/planned_shares.h"
#include "policy/round_policies.h"
#include "policy/share_policies.h"

namespace fairgpu::policy {
namespace {

// Work-conserving rounds (placement/midround.h).
struct MidroundOptions {
  bool on = true;
  // No start with less than this fraction of the round left (a restart the
  // rest of the round may not repay). Chosen over seeds 1-10 of the built-in
  // compare and OEF §6.3.1/§6.3.2 (bench/reproduce.sh): 0.1 / 0.2 / 0.3 /
  // 0.4 left 0.4 / 1.1 / 2.5 / 4.4 GPU-hours idle while jobs waited on the
  // built-in compare (off: 23.5), and on §6.3.2 restarts fell only from
  // 5,051 (0.1) to about 4,930 (0.3, 0.4) against 4,526 off, while the idle
  // time grew from 9.7 to 18.1 GPU-hours (off: 87.9). With 0.2,
  // docs/results has the paired effect (oef-coop:midround=off rows).
  double min_left = 0.2;
};

class ShareRoundPolicy final : public RoundPolicy {
 public:
  ShareRoundPolicy(std::string name, std::unique_ptr<SharePolicy> share, bool tenant_level,
                   double interval, bool tenant_demands, double demand_resolve_s,
                   double stranded_limit, placement::RoundingOptions rounding,
                   MidroundOptions midround)
      : midround_(midround),
        name_(std::move(name)),
        share_(std::move(share)),
        tenant_level_(tenant_level),
        tenant_demands_(tenant_demands),
        spread_idle_(rounding.spread_idle),
        keep_finishing_(rounding.keep_finishing),
        interval_(interval),
        demand_resolve_s_(demand_resolve_s),
        stranded_limit_(stranded_limit),
        placer_(rounding),
        gavel_round_{rounding.spread_min, rounding.spread_wait_s} {
    share_->remember_between_solves();
  }

  std::string_view name() const override { return name_; }
  std::string_view level() const override { return tenant_level_ ? "tenant" : "job"; }
  double interval() const override { return interval_; }
  // Tenant level reads gangs, rates and run times, and with keep_finishing
  // the running jobs' progress (whether they finish within the lease); job
  // level's Gavel rounds read time_on_type. (The simulator settles progress
  // beside a plan that reads none: keep_finishing read it while it was
  // written, and about 1 run in 24 of the built-in scenario came out
  // different.)
  bool reads_progress() const override { return !tenant_level_ || keep_finishing_; }

  std::vector<PlannedShare> planned_shares() const {
    std::vector<PlannedShare> out;
    for (std::size_t e = 0; e < problem_.num_entities() && e < x_.rows(); ++e)
      out.push_back({problem_.entities[e].name,
                     std::vector<double>(x_.row(e), x_.row(e) + x_.cols()),
                     problem_.entities[e].speedup, usable_demand_[e]});
    return out;
  }

  RoundPlan plan(const SchedulerState& s) override {
    RoundPlan plan;
    // Tenant level: the placer's free devices and its view of the jobs are
    // gathered on other threads while the rows are built and the LP solved
    // (neither reads what the others write; the view needs the rows' jobs).
    std::future<void> devices_ready, jobs_ready;
    WaitOnExit devices_on_exit(devices_ready), jobs_on_exit(jobs_ready);
    if (tenant_level_) {
      if (!gatherer_) gatherer_ = std::make_unique<TaskThread>();
      devices_ready = gatherer_->submit([&] { placer_.prepare_devices(s); });
    }
    if (s.changed || !solved_) {
      ShareProblem previous = std::move(problem_);
      tenant_level_ ? build_tenant_problem(s) : build_job_problem(s);
      if (tenant_level_)
        jobs_ready = gatherer_->submit([&] { placer_.prepare_jobs(s, entities_); });
      // Tenant level with demands: arrivals and completions move demands
      // every round on a busy cluster. A new row (a class of jobs appears)
      // re-solves at once; demands changing or rows leaving, at most every
      // demand_resolve_s_: meanwhile the rows keep their shares, and the
      // placer hands what a row cannot use (or a row that left held) to
      // others. On bench/simulate_scale.sh this saves about 10% of the solves.
      // Unless the stale shares strand GPUs rows want (stranded_past): on the
      // 72-GPU built-in compare, shares held for 900 s after a tenant's jobs
      // finished cost oef-coop 1.7 units of throughput against gavel at
      // tenant level (seeds 1-10, paired); re-solving once 1% of the GPUs is
      // stranded closes that gap, and adds 14 of 6,614 solves (0.2%) on
      // bench/simulate_scale.sh's 100k jobs.
      const bool same_rows = solved_ && rows_unchanged(previous);
      const bool holds = same_rows && demands_still_hold();
      // Except a capped row that can now use more than its bundle: held
      // at the bundle it needed when it had fewer jobs, it would get only
      // what others leave until the next re-solve (live, a tenant submitting
      // one job at a time stayed at half its weighted share for the whole
      // run; checked per row, since rows are capped one by one). Demands
      // falling stay stale: the placer hands what a row cannot use to
      // others, and the estimate counts only what each row can use.
      const bool stale_ok = solved_ && !holds && tenant_level_ && tenant_demands_ &&
                            s.now - solved_at_ < demand_resolve_s_ - 1e-9 &&
                            (same_rows || carry_over(previous)) && !capped_row_outgrew_bundle() &&
                            !stranded_past(stranded_limit_ * solved_total_);
      if (!holds && !stale_ok) {
        solve();
        solved_at_ = s.now;
        plan.recomputed = true;
      }
      solved_ = true;
      estimated_ = usable_throughput();
      if (!tenant_level_) x_jobs_ = per_job_allocation();
    }
    plan.estimated_throughput = estimated_;
    const double lease_end = s.now + interval_;
    if (tenant_level_) {
      devices_ready.get();
      if (jobs_ready.valid())
        jobs_ready.get();
      else  // the same rows as last round: nothing to overlap
        placer_.prepare_jobs(s, entities_);
      for (std::size_t e = 0; e < entities_.size(); ++e)
        for (std::size_t t = 0; t < x_.cols(); ++t)
          entities_[e].ideal[t] = std::max(0.0, x_(e, t));
      if (midround_.on) refund_stopped_early(s);
      plan.run = placer_.place(s, entities_, lease_end);
      if (midround_.on) remember_holders(s, plan, lease_end);
    } else {
      plan.run = placement::gavel_priority_round(s, jobs_, x_jobs_, lease_end, gavel_round_);
    }
    if (midround_.on) order_waiting(s, plan);
    steady_ = steady(s, plan);
    return plan;
  }

  // Event-cost simulation. Stable from a plan that, at a point with no
  // event since the last (no re-solve: the same rows and shares), found no
  // job waiting and renewed every running job on its own devices, each on
  // one node, where
  //   - tenant level: no job is within its quantum any more (the quantum
  //     keeps only jobs younger than it) and the placer's credits came out
  //     as they went in (held == ideal + credit, or clamped);
  //   - job level: each job's share is on one type only, the type it runs
  //     on (so Gavel's priorities, which age with time, order one pair per
  //     job, all of which fit as now).
  // The next point then gives the placer the same inputs (the state, the
  // shares, the credits; time enters only through the quantum, passed, and
  // the starvation order, which a shift of time keeps), hence the same
  // renewals, and so on until an event. The estimate stays in force.
  Stability stability(const SchedulerState&) const override {
    if (!steady_) return {};
    return {std::numeric_limits<double>::infinity(), interval_, estimated_};
  }

  bool starts_midround() const override { return midround_.on; }

  // The waiting jobs go by the row furthest below its share (after the plan
  // and the round's mid-round starts so far), its longest-stopped job first.
  // A first pass starts jobs on one node; GPUs none of them fits go, in a
  // second pass, to gangs spread over nodes of one type as the round's own
  // placement would let them (tenant level: spread_idle; job level: Gavel's
  // spread_min and spread_wait): on OEF §6.3.1's 4-GPU hosts, GPUs freed one
  // by one seldom make a whole host.
  std::vector<Assignment> midround(const SchedulerState& s, const std::vector<DeviceRef>& free,
                                   double round_end) override {
    if (!midround_.on) return {};
    take_arrivals(s);
    if (free.empty() || round_end - s.now < midround_.min_left * interval_) return {};
    std::vector<Assignment> out;
    placement::MidroundPlacer placer(s, free);
    scan_waiting(s, placer, round_end, false, out);
    if (placer.free_left() > 0 && (tenant_level_ ? spread_idle_ : true))
      scan_waiting(s, placer, round_end, true, out);
    return out;
  }

 private:
  // One pass of midround() over the waiting rows, best row first; a row
  // that gains a start is re-ranked and the scan starts again from the top.
  void scan_waiting(const SchedulerState& s, placement::MidroundPlacer& placer, double round_end,
                    bool spread, std::vector<Assignment>& out) {
    std::set<std::pair<int, std::uint64_t>> misfits;  // (workers, types) that fit nowhere now
    if (spread)  // a single worker that fit no node in the first pass fits none now
      for (const auto& kind : kinds_)
        if (kind.first <= 1) misfits.insert(kind);
    std::size_t at = 0;  // position in waiting_order_
    while (at < waiting_order_.size() && placer.free_left() > 0) {
      WaitingRow& row = waiting_rows_[waiting_order_[at].second];
      // A row of one kind that fits nowhere is passed over unread; once no
      // kind of waiting job fits, the scan stops (a big run has thousands
      // of rows and a completion every few seconds).
      if (row.uniform && misfits.count(row.kind)) {
        if (mixed_rows_ == 0 &&
            std::includes(misfits.begin(), misfits.end(), kinds_.begin(), kinds_.end()))
          break;
        ++at;
        continue;
      }
      if (row.members) {  // its waiting jobs, gathered when first needed
        for (std::size_t i : *row.members)
          if (s.jobs[i].state == JobState::kQueued) row.jobs.push_back(i);
        row.members = nullptr;
        row.sorted = false;
      }
      if (!row.sorted) {
        std::sort(row.jobs.begin(), row.jobs.end(), [&](std::size_t x, std::size_t y) {
          return std::tie(s.jobs[x].last_stop, x) < std::tie(s.jobs[y].last_stop, y);
        });
        row.sorted = true;
      }
      std::optional<Assignment> start;
      for (std::size_t i : row.jobs) {
        const Job& j = s.jobs[i];
        if (j.state != JobState::kQueued) continue;
        const std::pair<int, std::uint64_t> kind{j.workers, type_bits(j)};
        if (misfits.count(kind)) continue;
        const double floor = spread ? spread_floor(s, j) : 0.0;
        start = spread ? placer.place_spread({i, row.types}, round_end, floor)
                       : placer.place({i, row.types}, round_end);
        if (start) break;
        // A gang held back by its rate floor says nothing of its kind's others.
        if (floor == 0.0) misfits.insert(kind);
        if (row.uniform) break;
      }
      if (!start) {
        ++at;
        continue;
      }
      const std::size_t r = waiting_order_[at].second;
      waiting_order_.erase_at(at);
      row.shortfall -= s.jobs[start->job].workers;
      std::erase(row.jobs, start->job);
      waiting_order_.insert({-row.shortfall, r});
      if (tenant_level_) {  // held beyond the plan: out of its credit
        const Job& j = s.jobs[start->job];
        placer_.charge(rounding_key(j.tenant, j.job_type, tenant_demands_ ? j.workers : 0),
                       s.type_of(start->devices.front()),
                       j.workers * (round_end - s.now) / interval_);
      }
      out.push_back(std::move(*start));
      at = 0;
    }
  }
  // The lowest spread rate a mid-round spread start of `j` may take: tenant
  // level any (spread_idle); job level Gavel's rule, spread_min of its best
  // one-node rate until it has waited spread_wait since it last stopped.
  double spread_floor(const SchedulerState& s, const Job& j) const {
    if (tenant_level_ || gavel_round_.spread_min <= 0.0 ||
        s.now - j.last_stop >= gavel_round_.spread_wait_s - 1e-9)
      return 0.0;
    double best = 0.0;
    for (double r : j.rate_one_node) best = std::max(best, r);
    return gavel_round_.spread_min * best;
  }

  // Whether `plan` at s.now starts the stretch stability() describes.
  bool steady(const SchedulerState& s, const RoundPlan& plan) const {
    if (s.changed || plan.recomputed || plan.run.size() != s.running.size() ||
        s.active.size() != s.running.size())
      return false;
    const double quantum = placer_.quantum_s();
    for (const Assignment& a : plan.run) {
      const Job& j = s.jobs[a.job];
      if (j.state != JobState::kRunning || a.devices != j.devices || !a.resources.empty() ||
          !std::isnan(a.rate_multiplier) || a.finish_at_lease_end ||
          a.lease_end != s.now + interval_)
        return false;
      for (DeviceRef d : j.devices)
        if (d.node != j.devices.front().node) return false;
      if (tenant_level_ && s.now - j.run_start < quantum - 1e-9) return false;
    }
    if (tenant_level_) return placer_.credits_steady();
    if (x_jobs_.rows() != jobs_.size()) return false;
    for (std::size_t r = 0; r < jobs_.size(); ++r) {
      const Job& j = s.jobs[jobs_[r]];
      for (std::size_t t = 0; t < x_jobs_.cols(); ++t)
        if ((x_jobs_(r, t) / j.workers >= 1e-6) != (t == j.placement_type)) return false;
    }
    return true;
  }

  // Demands. Job level: every job is capped at its gang (the policies' own
  // demand-aware LPs). Tenant level with demands: progressive filling over
  // the LP rows, each row (tenant, job type, gang) a virtual tenant of OEF
  // §4.2.4 with its own demand (the GPUs its active jobs can use). Solve for
  // the rows not yet fixed on the capacity left; every row allocated more
  // than its demand is fixed at its bundle scaled down to that demand and
  // leaves the problem with those devices (and the part of its weight they
  // stand for: see below); repeat until no row exceeds its demand. Capping
  // only each tenant's total (as before) let one row of a single 4-GPU job
  // hold 14.8 GPUs while its tenant's other rows were short; per row, the
  // built-in scenario's oef-coop gained 6.1 +- 5.3 units of actual contended
  // throughput over seeds 1-10 (paired), its estimate level. Each step is the
  // policy's plain LP (equal speedup rows grouped), so this costs a few
  // paper-mode solves, where capped valuations inside oef-coop's envy rows
  // cost ~100x (measured on bench/simulate_scale.sh's workload). The unfixed
  // rows get exactly the policy's properties among themselves on what is
  // left; a fixed row holds all it can use, and its bundle is a scaled-down
  // one the others did not envy in full. An uncapped row's demand changing
  // does not call for a re-solve (demands_still_hold).
  void solve() {
    const std::size_t rows = problem_.num_entities();
    capped_.assign(rows, !tenant_level_);
    solved_demand_ = demand_;
    struct TotalOnExit {
      ShareRoundPolicy& p;
      ~TotalOnExit() {
        p.solved_total_ = 0.0;
        for (std::size_t e = 0; e < p.x_.rows(); ++e) p.solved_total_ += p.allocated(e);
      }
    } total_on_exit{*this};
    if (rows == 0) {
      x_ = Matrix();
      return;
    }
    // One sequence per re-solve: a single solve at job level, progressive
    // filling's steps at tenant level (without it a job-level policy kept
    // a remembered basis slot per solve, growing for the whole run).
    share_->begin_solve_sequence();
    if (!tenant_level_) {
      // One row per tenant (a job group): its demand is the tenant's.
      for (ShareTenant& t : problem_.tenants) t.demand = demand_[t.entities.front()];
      x_ = share_->allocate(problem_);
      return;
    }
    x_ = Matrix(rows, problem_.num_types());
    std::vector<double> capacity = problem_.capacity;
    // Each row's weight in the steps to come. A row fixed at d of the s GPUs
    // a step gave it keeps d/s of its weight, with those devices; the rest
    // goes to its tenant's unfixed rows, so the tenant keeps its weight while
    // it has rows that can use more (on one GPU type this is hierarchical
    // weighted max-min: tenants first, then rows). A tenant with no such row
    // left drops out, as a capped tenant always did. Without the transfer a
    // tenant whose one-gang row was capped fell below its weighted share.
    std::vector<double> weight(rows);
    for (std::size_t e = 0; e < rows; ++e) weight[e] = problem_.entities[e].weight;
    for (;;) {
      // The rows not fixed yet, under their tenants, on what the fixed ones
      // left; a tenant's weight is its unfixed rows'.
      ShareProblem sub;
      sub.gpu_types = problem_.gpu_types;
      sub.capacity = capacity;
      std::vector<std::size_t> entity_of;  // sub entity -> problem_ entity
      for (const ShareTenant& tenant : problem_.tenants) {
        // No names: the policies solve on numbers, and copying every row's
        // strings each step cost more than some solves.
        ShareTenant copy{{}, 0.0, kNoDemand, {}};
        for (std::size_t e : tenant.entities) {
          if (capped_[e]) continue;
          const ShareEntity& row = problem_.entities[e];
          ShareEntity entity;
          entity.speedup = row.speedup;
          entity.weight = weight[e];
          entity.tenant = sub.tenants.size();
          copy.weight += weight[e];
          copy.entities.push_back(sub.entities.size());
          sub.entities.push_back(std::move(entity));
          entity_of.push_back(e);
        }
        if (!copy.entities.empty()) sub.tenants.push_back(std::move(copy));
      }
      if (sub.entities.empty()) break;
      const Matrix xs = share_->allocate(sub);
      bool over = false;
      std::vector<double> unused(sub.tenants.size(), 0.0);  // weight fixed rows give back
      for (std::size_t e = 0; e < sub.entities.size(); ++e) {
        double size = 0.0;
        for (std::size_t j = 0; j < sub.num_types(); ++j) size += xs(e, j);
        const std::size_t r = entity_of[e];
        if (size <= demand_[r] * (1 + 1e-9) + 1e-9) continue;
        over = capped_[r] = true;
        const double scale = demand_[r] / size;
        unused[sub.entities[e].tenant] += weight[r] * (1 - scale);
        weight[r] *= scale;
        for (std::size_t j = 0; j < sub.num_types(); ++j) {
          x_(r, j) = xs(e, j) * scale;
          capacity[j] = std::max(0.0, capacity[j] - xs(e, j) * scale);
        }
      }
      if (!over) {
        for (std::size_t e = 0; e < sub.entities.size(); ++e)
          for (std::size_t j = 0; j < sub.num_types(); ++j) x_(entity_of[e], j) = xs(e, j);
        break;
      }
      // The weight given back, to the tenant's unfixed rows by their weights.
      for (std::size_t st = 0; st < sub.tenants.size(); ++st) {
        if (unused[st] == 0.0) continue;
        double left = 0.0;
        for (std::size_t e : sub.tenants[st].entities)
          if (!capped_[entity_of[e]]) left += weight[entity_of[e]];
        if (left <= 0.0) continue;
        for (std::size_t e : sub.tenants[st].entities)
          if (!capped_[entity_of[e]]) weight[entity_of[e]] *= 1 + unused[st] / left;
      }
    }
  }

  // Sum_l W_l . x_l with each row's bundle scaled down to the GPUs its active
  // jobs can use (usable_demand_: a row's workers at tenant level whatever
  // the mode, a job group's at job level): what the rows could run, the same
  // way at both levels, not shares a row holds but cannot use. It assumes a
  // row's share turns into running gangs at the rates its speedups give
  // (one node where one is big enough), whole GPUs and placement aside.
  double usable_throughput() const {
    double total = 0.0;
    for (std::size_t e = 0; e < problem_.num_entities(); ++e) {
      double value = 0.0, size = 0.0;
      for (std::size_t j = 0; j < problem_.num_types(); ++j) {
        value += problem_.entities[e].speedup[j] * x_(e, j);
        size += x_(e, j);
      }
      const double usable = usable_demand_[e];
      total += size > usable && size > 0 ? value * usable / size : value;
    }
    return total;
  }

  // Whether a row whose demand x_ imposes (capped_) can now use more than
  // x_ gives it. x_ must be indexed like problem_ (same rows, or after
  // carry_over).
  bool capped_row_outgrew_bundle() const {
    for (std::size_t e = 0; e < problem_.num_entities(); ++e)
      if (capped_[e] && demand_[e] > allocated(e) * (1 + 1e-9) + 1e-9) return true;
    return false;
  }

  // Whether stale shares strand more than `limit` GPUs that rows want: the
  // share the last solve handed out that no row can use now (rows that left,
  // rows whose jobs finished) and the GPUs rows could use beyond their share
  // both exceed it. x_ must be indexed like problem_ (after carry_over).
  bool stranded_past(double limit) const {
    double held = 0.0, wanted = 0.0;
    for (std::size_t e = 0; e < problem_.num_entities(); ++e) {
      const double a = allocated(e), usable = usable_demand_[e];
      held += std::min(a, usable);
      wanted += std::max(0.0, usable - a);
    }
    return std::min(solved_total_ - held, wanted) > limit + 1e-9;
  }

  double allocated(std::size_t row) const {
    double sum = 0.0;
    for (std::size_t j = 0; j < problem_.num_types(); ++j) sum += x_(row, j);
    return sum;
  }

  // When every row of problem_ was a row of `previous` (same name and
  // speedups): x_, capped_ and solved_demand_ re-indexed to problem_'s rows,
  // the rows that left dropped. False, changing nothing, if a row is new.
  bool carry_over(const ShareProblem& previous) {
    std::unordered_map<std::string_view, std::size_t> row_index;
    for (std::size_t e = 0; e < previous.num_entities(); ++e)
      row_index.emplace(previous.entities[e].name, e);
    Matrix x(problem_.num_entities(), problem_.num_types());
    std::vector<bool> capped(problem_.num_entities(), false);
    std::vector<double> solved_demand(problem_.num_entities());
    for (std::size_t e = 0; e < problem_.num_entities(); ++e) {
      auto it = row_index.find(problem_.entities[e].name);
      if (it == row_index.end() || previous.entities[it->second].speedup != problem_.entities[e].speedup)
        return false;
      for (std::size_t j = 0; j < problem_.num_types(); ++j) x(e, j) = x_(it->second, j);
      capped[e] = capped_[it->second];
      solved_demand[e] = solved_demand_[it->second];
    }
    x_ = std::move(x);
    capped_ = std::move(capped);
    solved_demand_ = std::move(solved_demand);
    return true;
  }

  // Whether problem_ has the rows x_ was solved for (`previous`): the same
  // tenants and entities, speedups and weights.
  bool rows_unchanged(const ShareProblem& previous) const {
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
    return true;
  }

  // With the same rows, whether x_ is still the answer for the demands now:
  // every row whose demand differs from the one x_ was solved with
  // (solved_demand_, not last round's: a row whose demand fell in a round
  // that kept stale shares must not pass as unchanged in the next) is
  // uncapped and can still use what it holds, or capped with its demand,
  // then and now, above every bundle any row holds (scaled to its weight),
  // so it binds no constraint at the optimum. (A row capped at tenant level
  // holds exactly its old demand, so a change there always re-solves.)
  bool demands_still_hold() const {
    const ShareProblem& p = problem_;
    double size_per_weight = -1.0;
    for (std::size_t l = 0; l < p.num_entities(); ++l) {
      const double now_d = demand_[l], before_d = solved_demand_[l];
      if (now_d == before_d) continue;
      if (!capped_[l]) {
        if (allocated(l) > now_d * (1 + 1e-9) + 1e-9) return false;
        continue;
      }
      if (size_per_weight < 0.0) {  // max_i |x_i| / w_i, once
        size_per_weight = 0.0;
        for (std::size_t i = 0; i < p.num_entities(); ++i)
          size_per_weight = std::max(size_per_weight, allocated(i) / p.entities[i].weight);
      }
      const double largest = size_per_weight * p.entities[l].weight;
      const double margin = 1e-6 * std::max(1.0, largest);
      if (!(now_d > largest + margin && before_d > largest + margin)) return false;
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

  // "resnet50 x4": a row's job class, named once.
  const std::string& class_name(const SchedulerState& s, std::size_t job_type, int gang) {
    auto [it, fresh] = class_names_.try_emplace({job_type, gang});
    if (fresh) it->second = fmt::format("{} x{}", s.model->profiles.job_types[job_type].name, gang);
    return it->second;
  }

  // Stable across rounds: (tenant, job type, gang or 0).
  std::uint64_t rounding_key(std::size_t tenant, std::size_t job_type, int gang) const {
    return (static_cast<std::uint64_t>(tenant) * num_job_types_ + job_type) * (kMaxGang + 1) +
           static_cast<std::uint64_t>(gang);
  }
  static constexpr std::uint64_t kMaxGang = 1u << 20;

  ShareProblem empty_problem(const SchedulerState& s) const {
    ShareProblem p;
    p.gpu_types = s.model->cluster.gpu_types;
    p.capacity.assign(s.model->capacity.begin(), s.model->capacity.end());
    return p;
  }

  // The active jobs as members sorted by (tenant, job type, gang, index),
  // read from the jobs: a counting sort by tenant, then a sort within each
  // tenant (the same order as one sort of all members).
  void sort_members(const SchedulerState& s) {
    std::vector<Member>& members = members_;
    const std::size_t n_tenants = s.tenants.size();
    const bool by_tenant = n_tenants <= 4 * s.active.size() + 64;
    members.resize(s.active.size());
    if (by_tenant) tenant_first_.assign(n_tenants + 1, 0);
    bool adaptive = false;
    for (std::size_t r = 0; r < s.active.size(); ++r) {
      prefetch_ahead(s.jobs, s.active, r, &Job::tenant, &Job::job_type);
      const Job& j = s.jobs[s.active[r]];
      members[r] = {j.tenant,  j.job_type,         tenant_demands_ ? j.workers : 0, s.active[r],
                    j.workers, j.rate_best.data(), j.ref_rate};
      if (by_tenant) ++tenant_first_[j.tenant + 1];
      adaptive = adaptive || j.adaptive();
    }
    if (by_tenant) {
      for (std::size_t t = 0; t < n_tenants; ++t) tenant_first_[t + 1] += tenant_first_[t];
      sorted_members_.resize(members.size());
      tenant_fill_.assign(tenant_first_.begin(), tenant_first_.end() - 1);
      for (const Member& m : members) sorted_members_[tenant_fill_[m.tenant]++] = m;
      members.swap(sorted_members_);
      for (std::size_t t = 0; t < n_tenants; ++t)
        if (tenant_first_[t + 1] - tenant_first_[t] > 1)
          std::sort(members.begin() + static_cast<std::ptrdiff_t>(tenant_first_[t]),
                    members.begin() + static_cast<std::ptrdiff_t>(tenant_first_[t + 1]));
    } else {
      std::sort(members.begin(), members.end());
    }
    // The members as the next round's merge_members() starts from, unless a
    // job's row can change under it (adaptive jobs change job type).
    merge_ok_ = !adaptive;
    if (!merge_ok_) return;
    member_of_.assign(s.jobs.size(), 0);
    for (const Member& m : members) member_of_[m.job] = 1;
    merged_state_ = &s;
    merged_jobs_ = s.jobs.data();
    merged_job_count_ = s.jobs.size();
    merged_tenants_ = n_tenants;
    merged_at_ = s.now;
  }

  // The same members from last round's: completions leave, arrivals are read
  // and merged in, so the jobs that stay are not read again (on big runs
  // reading ~14,000 scattered jobs every round was most of the rows' cost).
  // A member's fields are fixed for the job's life unless it is adaptive, so
  // this is exact; false (sort_members() then) where that may not hold.
  bool merge_members(const SchedulerState& s) {
    // The same state going forward in time (not another one at the same place).
    if (!merge_ok_ || merged_state_ != &s || merged_jobs_ != s.jobs.data() ||
        merged_job_count_ != s.jobs.size() || merged_tenants_ != s.tenants.size() ||
        s.now < merged_at_)
      return false;
    merged_at_ = s.now;
    // member_of_: 1 = a member, 2 = a member still active (this round).
    arrived_.clear();
    for (std::size_t r = 0; r < s.active.size(); ++r) {
      char& flag = member_of_[s.active[r]];
      if (flag == 1) {
        flag = 2;
        continue;
      }
      if (flag != 0) return merge_fallback();  // named twice: not what this assumes
      const Job& j = s.jobs[s.active[r]];
      if (j.adaptive()) return merge_fallback();
      arrived_.push_back({j.tenant, j.job_type, tenant_demands_ ? j.workers : 0, s.active[r],
                          j.workers, j.rate_best.data(), j.ref_rate});
      flag = 3;  // new, marked so it is counted once
    }
    std::size_t kept = 0;
    for (const Member& m : members_) {
      char& flag = member_of_[m.job];
      if (flag == 2) {
        flag = 1;
        members_[kept++] = m;
      } else {
        flag = 0;  // left: finished (or no longer active)
      }
    }
    members_.resize(kept);
    for (const Member& m : arrived_) member_of_[m.job] = 1;
    std::sort(arrived_.begin(), arrived_.end());
    sorted_members_.resize(members_.size() + arrived_.size());
    std::merge(members_.begin(), members_.end(), arrived_.begin(), arrived_.end(),
               sorted_members_.begin());
    members_.swap(sorted_members_);
    return true;
  }
  // merge_members() gives up; sort_members() starts afresh (its marks too).
  bool merge_fallback() {
    merge_ok_ = false;
    return false;
  }

  // Tenant level. Paper mode: one LP row per (tenant, job type) with the job
  // type's 1-worker speedups (OEF §4.2.4). Demand- and gang-aware: one row per
  // (tenant, job type, gang size), whose speedups are what that gang achieves
  // per GPU on each type relative to its reference type (one node where a
  // node is big enough, else spread): a tenant of 8-worker jobs plans with
  // what its gangs run at, and the vector is the same for every tenant with
  // that job type and gang, so the policies' grouping of equal rows still
  // applies and arrivals change only demands, not speedups. Each row is a
  // virtual tenant of its own for the placer, as OEF §4.2.4 makes job types:
  // its jobs take turns on its share, a gang saving up on it. (Pooling a
  // tenant's rows for the turns, jobs still placed by their own row's
  // shares, was measured on tests/data/gang-mix-20x12.csv: the worst first
  // wait of a >= 4-GPU job fell from 20 h to 6 h, but turns then ignore the
  // rows' shares and actual throughput fell from 90% to 76% of the estimate.)
  void build_tenant_problem(const SchedulerState& s) {
    problem_ = empty_problem(s);
    for (std::size_t t : weighed_tenants_) tenant_weighed_[t] = 0;
    weighed_tenants_.clear();
    tenant_weight_sum_ = 0.0;
    num_job_types_ = s.model->profiles.job_types.size();
    demand_.clear();
    usable_demand_.clear();
    // Entities are rebuilt in place: their vectors keep their capacity.
    std::size_t used = 0;
    auto next_entity = [&]() -> placement::RoundingEntity& {
      if (used == entities_.size()) entities_.emplace_back();
      placement::RoundingEntity& ent = entities_[used++];
      ent.jobs.clear();
      return ent;
    };
    // tenant -> (job type, gang or 0) -> its active jobs, in index order.
    // Active jobs sorted by (tenant, job type, gang, index): each run of
    // equal classes is one row (a sort, not maps: this runs most rounds).
    if (!merge_members(s)) sort_members(s);
    const std::vector<Member>& members = members_;
    // Where each row starts, so the rates of a row's first job can be
    // fetched a few rows ahead (the job itself is not read again).
    row_first_.clear();
    for (std::size_t m = 0; m < members.size(); ++m)
      if (m == 0 || members[m].tenant != members[m - 1].tenant ||
          members[m].job_type != members[m - 1].job_type || members[m].gang != members[m - 1].gang)
        row_first_.push_back(m);
    std::size_t row = 0;
    for (std::size_t m = 0; m < members.size();) {
      const std::size_t tenant = members[m].tenant;
      std::vector<std::pair<std::string, std::vector<double>>> types;
      while (m < members.size() && members[m].tenant == tenant) {
        const std::size_t type = members[m].job_type;
        const int gang = members[m].gang;
        placement::RoundingEntity& ent = next_entity();
        const Member& first = members[m];
        constexpr std::size_t kAhead = 4;
        if (row + kAhead < row_first_.size())
          __builtin_prefetch(members[row_first_[row + kAhead]].rate_best);
        ++row;
        double demand = 0.0;  // the row's: GPUs its active jobs can use
        for (; m < members.size() && members[m].tenant == tenant &&
               members[m].job_type == type && members[m].gang == gang;
             ++m) {
          ent.jobs.push_back(members[m].job);
          demand += members[m].workers;
        }
        if (gang == 0) {
          types.emplace_back(s.model->profiles.job_types[type].name, speedup_of(s, type));
        } else {
          std::vector<double> w(problem_.num_types());
          for (std::size_t t = 0; t < w.size(); ++t) w[t] = first.rate_best[t] / first.ref_rate;
          types.emplace_back(class_name(s, type, gang), std::move(w));
        }
        ent.key = rounding_key(tenant, type, gang);
        ent.ideal.assign(problem_.num_types(), 0.0);
        demand_.push_back(tenant_demands_ ? demand : kNoDemand);
        usable_demand_.push_back(demand);
      }
      const TenantSpec& spec = s.tenants[tenant];
      weigh_tenant(tenant, spec.weight);
      // Rows keep one name however many a tenant has (carry_over matches by
      // it). No tenant demand: rows are capped one by one in solve().
      if (types.size() == 1 && !tenant_demands_)
        problem_.add_tenant(spec.name, types.front().second, spec.weight);
      else
        problem_.add_tenant_job_types(spec.name, std::move(types), spec.weight);
    }
    entities_.resize(used);
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
    usable_demand_.clear();
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
      usable_demand_.push_back(c * j.workers);
    }
  }

  // The waiting jobs the plan left out, by row, for midround(): tenant
  // level, a row is an LP row (shortfall: GPUs of its share minus GPUs its
  // jobs hold after the plan); job level, each job is one (shortfall: its
  // planned GPUs, as Gavel's priorities favour). Types in the row's share
  // are preferred; a row's jobs go longest stopped first.
  struct WaitingRow {
    double shortfall = 0.0;
    std::uint64_t types = 0;
    double arrived = 0.0;  // a row without a share yet: the workers of its arrivals
    std::vector<std::size_t> jobs;
    // Tenant level: the row's jobs at the plan, read into `jobs` (those
    // waiting) the first time the row is tried: most rows never are, and
    // reading every active job every round cost the 1M-job run 70% more
    // policy time.
    const std::vector<std::size_t>* members = nullptr;
    bool sorted = false;  // jobs longest stopped first (done when first needed)
    // Every job of the row is of one kind (workers, types it runs on): rows
    // with demands (tenant, job type, gang) and job level's.
    bool uniform = false;
    std::pair<int, std::uint64_t> kind{0, 0};
  };
  // Kinds of the uniform rows, and how many rows mix kinds.
  std::set<std::pair<int, std::uint64_t>> kinds_;
  std::size_t mixed_rows_ = 0;
  void note_kind(WaitingRow& row, const Job& j) {
    row.uniform = !tenant_level_ || tenant_demands_;
    row.kind = {j.workers, type_bits(j)};
    if (row.uniform)
      kinds_.insert(row.kind);
    else
      ++mixed_rows_;
  }
  static std::uint64_t type_bits(const Job& j) {
    std::uint64_t bits = 0;
    for (std::size_t t = 0; t < j.rate_best.size() && t < 64; ++t)
      if (j.runs_on(t)) bits |= std::uint64_t{1} << t;
    return bits;
  }
  void order_waiting(const SchedulerState& s, const RoundPlan& plan) {
    waiting_rows_.clear();
    waiting_order_.clear();
    row_of_key_.clear();
    kinds_.clear();
    mixed_rows_ = 0;
    seen_jobs_ = s.active.empty() ? 0 : s.active.back() + 1;
    if (tenant_level_) {
      // O(rows + plan): the plan's jobs counted against their rows' shares.
      std::vector<std::size_t> placed(entities_.size(), 0);
      waiting_rows_.resize(entities_.size());
      for (std::size_t e = 0; e < entities_.size(); ++e) {
        const placement::RoundingEntity& ent = entities_[e];
        WaitingRow& row = waiting_rows_[e];
        for (std::size_t t = 0; t < ent.ideal.size(); ++t) {
          row.shortfall += ent.ideal[t];
          if (ent.ideal[t] > 1e-9 && t < 64) row.types |= std::uint64_t{1} << t;
        }
        row.members = &ent.jobs;
      }
      // Rows are found by key with a binary search (the rows come sorted by
      // tenant, job type and gang, so by key); a hash map of every row,
      // rebuilt each round, only where they are not.
      rows_by_key_ = std::is_sorted(entities_.begin(), entities_.end(),
                                    [](const placement::RoundingEntity& a,
                                       const placement::RoundingEntity& b) { return a.key < b.key; });
      if (!rows_by_key_)
        for (std::size_t e = 0; e < entities_.size(); ++e) row_of_key_[entities_[e].key] = e;
      // Each run's row from the placer (reading 20,000 scattered jobs a
      // round for their keys cost the 1M-job run more than the placement).
      const std::vector<std::size_t>& row_of_run = placer_.entities_of_last_place();
      for (std::size_t q = 0; q < plan.run.size(); ++q) {
        waiting_rows_[row_of_run[q]].shortfall -= static_cast<double>(plan.run[q].devices.size());
        ++placed[row_of_run[q]];
      }
      for (std::size_t e = 0; e < entities_.size(); ++e) {
        if (entities_[e].jobs.size() <= placed[e]) continue;
        note_kind(waiting_rows_[e], s.jobs[entities_[e].jobs.front()]);
        waiting_order_.add_unsorted({-waiting_rows_[e].shortfall, e});
      }
      waiting_order_.sort();
      return;
    }
    // Job level: one row per job the plan left out (a flag per job, sized
    // once and cleared again: O(plan) a round).
    in_plan_.resize(s.jobs.size(), 0);
    for (const Assignment& a : plan.run) in_plan_[a.job] = 1;
    for (std::size_t r = 0; r < jobs_.size(); ++r) {
      const std::size_t i = jobs_[r];
      if (in_plan_[i]) continue;
      WaitingRow row;
      for (std::size_t t = 0; t < x_jobs_.cols(); ++t) {
        row.shortfall += x_jobs_(r, t);
        if (x_jobs_(r, t) > 1e-9 && t < 64) row.types |= std::uint64_t{1} << t;
      }
      row.jobs = {i};
      note_kind(row, s.jobs[i]);
      waiting_order_.add_unsorted({-row.shortfall, waiting_rows_.size()});
      waiting_rows_.push_back(std::move(row));
    }
    waiting_order_.sort();
    for (const Assignment& a : plan.run) in_plan_[a.job] = 0;
  }
  // With mid-round starts charged to the rows that got them, a run of the
  // plan that stopped before its round ended (finished, failed) gives its
  // row back the rest of the round: its GPUs went to others.
  struct Holder {
    std::size_t job;
    std::uint64_t key;
    std::size_t type;
    int workers;
  };
  void remember_holders(const SchedulerState& s, const RoundPlan& plan, double round_end) {
    holders_.clear();
    holders_until_ = round_end;
    const std::vector<std::size_t>& row_of_run = placer_.entities_of_last_place();
    for (std::size_t q = 0; q < plan.run.size(); ++q) {
      const Assignment& a = plan.run[q];
      holders_.push_back({a.job, entities_[row_of_run[q]].key, s.type_of(a.devices.front()),
                          static_cast<int>(a.devices.size())});
    }
  }
  void refund_stopped_early(const SchedulerState& s) {
    for (std::size_t r = 0; r < holders_.size(); ++r) {
      constexpr std::size_t kAhead = 8;  // the jobs lie scattered (core/prefetch.h)
      if (r + kAhead < holders_.size()) {
        const Job& ahead = s.jobs[holders_[r + kAhead].job];
        __builtin_prefetch(&ahead.state);
        __builtin_prefetch(&ahead.last_stop);
      }
      const Holder& h = holders_[r];
      const Job& j = s.jobs[h.job];
      const double stopped = j.state == JobState::kFinished ? j.record.finish
                             : j.state == JobState::kRunning ? holders_until_
                                                             : j.last_stop;
      if (stopped < holders_until_)
        placer_.charge(h.key, h.type, -h.workers * (holders_until_ - stopped) / interval_);
    }
    holders_.clear();
  }

  // Jobs that arrived since the plan join their row (a row the plan has not
  // seen: short of all its jobs can use).
  void take_arrivals(const SchedulerState& s) {
    std::size_t r = s.active.size();
    while (r > 0 && s.active[r - 1] >= seen_jobs_) --r;
    for (; r < s.active.size(); ++r) {
      const std::size_t i = s.active[r];
      const Job& j = s.jobs[i];
      std::size_t row = waiting_rows_.size();
      if (tenant_level_) {
        const std::uint64_t key = rounding_key(j.tenant, j.job_type, tenant_demands_ ? j.workers : 0);
        const auto planned = std::lower_bound(
            entities_.begin(), entities_.end(), key,
            [](const placement::RoundingEntity& e, std::uint64_t k) { return e.key < k; });
        if (rows_by_key_ && planned != entities_.end() && planned->key == key) {
          row = static_cast<std::size_t>(planned - entities_.begin());
        } else {  // a row of arrivals only (or rows not sorted by key)
          auto [at, fresh] = row_of_key_.try_emplace(key, waiting_rows_.size());
          row = at->second;
          if (fresh) waiting_rows_.emplace_back();
        }
      } else {
        waiting_rows_.emplace_back();
      }
      WaitingRow& w = waiting_rows_[row];
      if (!waiting_order_.erase({-w.shortfall, row})) note_kind(w, j);  // not listed yet
      if (w.types == 0) {  // a row without a share yet: what the next plan would about give it
        const double share = arrival_share(s, j);
        w.shortfall += std::min(w.arrived + j.workers, share) - std::min(w.arrived, share);
        w.arrived += j.workers;
      }
      w.jobs.push_back(i);
      w.sorted = false;
      waiting_order_.insert({-w.shortfall, row});
    }
    if (!s.active.empty()) seen_jobs_ = std::max(seen_jobs_, s.active.back() + 1);
  }

  // The GPUs a row of arrivals only would about get at the next plan: the
  // cluster's GPUs in proportion to its owner's weight among the weights
  // active (tenants at tenant level, jobs at job level), at most what it
  // asks. Counting its workers alone started arrivals between scheduling
  // points without regard to weights: live, with weights 2:1, a round's
  // arrivals went half to each tenant.
  double arrival_share(const SchedulerState& s, const Job& j) {
    double weight = j.weight, total = s.active_weight;
    if (tenant_level_) {
      weight = s.tenants[j.tenant].weight;
      weigh_tenant(j.tenant, weight);  // a tenant new since the plan counts from now
      total = tenant_weight_sum_;
    }
    if (!(total > 0.0) || !(weight > 0.0)) return j.workers;
    return s.model->total_gpus * weight / total;
  }

  // Counts a tenant's weight in tenant_weight_sum_ once.
  void weigh_tenant(std::size_t tenant, double weight) {
    if (tenant >= tenant_weighed_.size()) tenant_weighed_.resize(tenant + 1, 0);
    if (tenant_weighed_[tenant]) return;
    tenant_weighed_[tenant] = 1;
    weighed_tenants_.push_back(tenant);
    tenant_weight_sum_ += weight;
  }

  // Job level: each job's share of its group's allocation.
  Matrix per_job_allocation() const {
    Matrix x(jobs_.size(), x_.cols());
    for (std::size_t r = 0; r < jobs_.size(); ++r)
      for (std::size_t t = 0; t < x_.cols(); ++t)
        x(r, t) = x_(job_group_[r], t) / static_cast<double>(group_size_[job_group_[r]]);
    return x;
  }

  MidroundOptions midround_;
  std::vector<WaitingRow> waiting_rows_;  // order_waiting()'s, for midround()
  // (-shortfall, row) of the rows with waiting jobs, best first: a sorted
  // vector, not a std::set (freeing thousands of tree nodes every round cost
  // the 1M-job run more than ordering them; an update is a short memmove).
  class RowOrder {
   public:
    using Entry = std::pair<double, std::size_t>;
    std::size_t size() const { return order_.size(); }
    const Entry& operator[](std::size_t i) const { return order_[i]; }
    void clear() { order_.clear(); }
    void add_unsorted(Entry e) { order_.push_back(e); }  // then sort()
    void sort() { std::sort(order_.begin(), order_.end()); }
    void insert(Entry e) { order_.insert(std::lower_bound(order_.begin(), order_.end(), e), e); }
    void erase_at(std::size_t i) { order_.erase(order_.begin() + static_cast<std::ptrdiff_t>(i)); }
    bool erase(Entry e) {  // whether it was there
      const auto it = std::lower_bound(order_.begin(), order_.end(), e);
      if (it == order_.end() || *it != e) return false;
      order_.erase(it);
      return true;
    }

   private:
    std::vector<Entry> order_;
  };
  RowOrder waiting_order_;
  // Tenant level: a row of entities_ by key (binary search) where rows_by_key_,
  // else and for rows of arrivals the plan did not see, row_of_key_.
  bool rows_by_key_ = false;
  std::unordered_map<std::uint64_t, std::size_t> row_of_key_;
  std::size_t seen_jobs_ = 0;  // jobs from this index on arrived after the plan
  // Tenant level: the tenants with active jobs at the last problem built,
  // and arrivals' tenants since, with the sum of their weights
  // (arrival_share).
  std::vector<char> tenant_weighed_;
  std::vector<std::size_t> weighed_tenants_;
  double tenant_weight_sum_ = 0.0;
  std::vector<Holder> holders_;  // the last plan's runs (tenant level, midround on)
  double holders_until_ = 0.0;
  std::vector<char> in_plan_;
  std::string name_;
  std::unique_ptr<SharePolicy> share_;
  bool tenant_level_;
  bool tenant_demands_;
  bool spread_idle_;  // tenant level: gangs may run spread on GPUs no one else takes
  bool keep_finishing_;  // the placer reads running jobs' progress
  double interval_;
  double demand_resolve_s_;  // tenant level with demands: see plan()
  double stranded_limit_;     // resolve_stranded: see stranded_past()
  double solved_total_ = 0.0;  // sum of x_ when it was solved
  bool solved_ = false;
  bool steady_ = false;  // stability(): the last plan was steady()
  double solved_at_ = 0.0;
  ShareProblem problem_;
  // Per row of problem_ (entity; at job level also its tenant):
  std::vector<double> demand_;         // its demand cap (kNoDemand: none)
  std::vector<double> usable_demand_;  // GPUs its active jobs can use
  std::vector<bool> capped_;           // its demand is imposed on the policy
  std::vector<double> solved_demand_;  // its demand when x_ was solved
  Matrix x_;
  double estimated_ = 0.0;
  std::vector<placement::RoundingEntity> entities_;  // tenant level: rows of x_
  // build_tenant_problem's scratch, kept for its capacity.
  struct Member {
    std::size_t tenant, job_type;
    int gang;
    std::size_t job;
    // The job's (functions of `job`: not part of the order), read with the
    // fields above so the job is not read again for its row's speedups.
    int workers;
    const double* rate_best;
    double ref_rate;
    bool operator<(const Member& o) const {
      return std::tie(tenant, job_type, gang, job) < std::tie(o.tenant, o.job_type, o.gang, o.job);
    }
  };
  std::vector<Member> members_, sorted_members_, arrived_;
  // merge_members()' state: per job whether it is a member, and what the
  // members were read from.
  std::vector<char> member_of_;
  bool merge_ok_ = false;
  const SchedulerState* merged_state_ = nullptr;
  const Job* merged_jobs_ = nullptr;
  std::size_t merged_job_count_ = 0, merged_tenants_ = 0;
  double merged_at_ = 0.0;
  std::vector<std::size_t> tenant_first_, tenant_fill_, row_first_;
  std::vector<std::size_t> jobs_;          // job level: the active jobs
  std::vector<std::size_t> job_group_;     // job level: row of x_ for each of jobs_
  std::vector<std::size_t> group_size_;    // job level: jobs per row of x_
  Matrix x_jobs_;                          // job level: one row per job of jobs_
  std::map<std::size_t, std::vector<double>> type_speedup_;
  std::map<std::pair<std::size_t, int>, std::string> class_names_;
  std::size_t num_job_types_ = 0;
  placement::OefRoundingPlacer placer_;
  placement::GavelRoundOptions gavel_round_;  // job level
  // plan()'s second thread at tenant level (made at the first such plan);
  // last, so it ends before the members its tasks use.
  std::unique_ptr<TaskThread> gatherer_;
};

}  // namespace

std::vector<PlannedShare> planned_shares(const RoundPolicy& policy) {
  const auto* share = dynamic_cast<const ShareRoundPolicy*>(&policy);
  return share ? share->planned_shares() : std::vector<PlannedShare>{};
}

// The keys of every share policy run in rounds. A key of the placer or the
// rounds goes here (with its default, range and one line of help) and is read
// in NewShareRoundPolicy; `name` is the share policy's registered name, for
// keys or defaults that differ between them.
std::vector<OptionSpec> ShareRoundPolicyKeys(const std::string& name) {
  // Round lengths from the papers: OEF 5 min (§6.1.1), Gavel 6 min. Measured
  // for oef-coop on the built-in compare (seeds 1-10, paired against 300 s):
  // 120 / 180 / 600 / 900 s rounds gave -1.48 +- 1.45 / -0.25 +- 0.84 /
  // +0.34 +- 2.30 / -0.76 +- 2.56 units of contended actual throughput with
  // 7,874 / 5,983 / 2,658 / 2,253 restarts (300 s: 4,472): throughput is
  // level across them, so the paper's 300 s stays; longer rounds trade
  // restarts for GPUs idle while jobs wait (0.42 GPU-hours at 300 s, 1.75 at
  // 900 s). Every share policy has this one default, Gavel too (its paper's
  // 6-minute rounds: `gavel:round=360`), so that simulate, compare and sweep
  // run the same experiment on the same rounds: compare put the share
  // policies on one length while sweep ran Gavel alone on 360 s, and a
  // sweep's cell did not equal the compare's row.
  const bool gavel = name == "gavel";
  std::vector<OptionSpec> keys = {
      choice_option("level", gavel ? "job" : "tenant",
                    "tenant (shares per tenant, OEF's placer) or job (Gavel's priority rounds)",
                    {"tenant", "job"}),
      number_option("round", 300.0, "round length in seconds (Gavel's paper: 360)", 0.0,
                    std::numeric_limits<double>::infinity(), true),
      bool_option("demands", true,
                  "tenant level: demand- and gang-aware shares (off: 1-worker speedups and "
                  "weights only, as in OEF)"),
      number_option("quantum", placement::RoundingOptions{}.quantum_s,
                    "tenant level: seconds a job started within its share keeps its GPUs, and "
                    "any running job is not swapped for a waiting job of its own row (0: every "
                    "round decides afresh, as in OEF)",
                    0.0, std::numeric_limits<double>::infinity()),
      bool_option("move", placement::RoundingOptions{}.move_to_faster,
                  "tenant level: move running jobs onto idle faster GPUs when the gain repays "
                  "the restart within the round"),
      number_option("spread_min", placement::RoundingOptions{}.spread_min,
                    "a gang waits (up to spread_wait) rather than run spread below this "
                    "fraction of its best one-node rate (0: takes any placement)",
                    0.0, 1.0),
      number_option("spread_wait", placement::RoundingOptions{}.spread_wait_s,
                    "seconds a gang waits for a placement at spread_min before it takes any", 0.0,
                    std::numeric_limits<double>::infinity()),
      bool_option("spread_idle", placement::RoundingOptions{}.spread_idle,
                  "tenant level: a gang waiting for spread_min runs meanwhile on GPUs no other "
                  "job takes (still first in line)"),
      bool_option("affine", placement::RoundingOptions{}.type_affine,
                  "tenant level: leftover GPUs of a type go first to rows whose share includes "
                  "it; a job on a type faster than its row's share yields it to starts within "
                  "shares"),
      bool_option("keep_finishing", placement::RoundingOptions{}.keep_finishing,
                  "tenant level: a running job that would finish before the lease ends, or "
                  "within keep_restarts restart overheads, keeps its GPUs whatever its share "
                  "and is not moved (a correction smaller than what the restart costs is not "
                  "made; off: the share alone decides, as in OEF)"),
      number_option("keep_restarts", placement::RoundingOptions{}.keep_restarts,
                    "tenant level with keep_finishing: a running job whose time left at its "
                    "rate is within this many of its restart overheads (restart_overhead_s) "
                    "keeps its GPUs, when that is longer than the round (0: the round only)",
                    0.0, std::numeric_limits<double>::infinity()),
      bool_option("midround", MidroundOptions{}.on,
                  "work-conserving rounds: GPUs freed mid-round go at once to the waiting jobs "
                  "the plan would pick next, until the round ends (off: idle until the next "
                  "round, as in the papers)"),
      number_option("midround_min", MidroundOptions{}.min_left,
                    "no mid-round start with less than this fraction of the round left", 0.0,
                    1.0),
      number_option("resolve", 900.0,
                    "tenant level with demands: seconds between re-solves for demand changes "
                    "alone (a new class of jobs re-solves at once)",
                    0.0, std::numeric_limits<double>::infinity()),
      number_option("resolve_stranded", 0.01,
                    "tenant level with demands: re-solve before `resolve` has passed once shares "
                    "no row can use and GPUs rows want beyond their shares both exceed this "
                    "fraction of the GPUs shared (1: never)",
                    0.0, 1.0),
  };
  if (name == "gandiva-fair")
    keys.push_back(choice_option("mechanism", "trading",
                                 "trading (tenant-level shares traded between GPU types, OEF "
                                 "§2.4) or stride (job-level stride scheduling, tickets = gang "
                                 "size, as Shockwave §8.2 ran it; ignores level)",
                                 {"trading", "stride"}));
  return keys;
}

std::unique_ptr<RoundPolicy> NewShareRoundPolicy(const std::string& name,
                                                 const PolicyOptions& options) {
  if (name == "gandiva-fair" && options.choice("mechanism") == "stride")
    return NewGandivaStridePolicy(options);
  auto share = name == "gavel" && options.choice("level") == "job" ? NewGavelSingleLevel()
                                                                   : make_share_policy(name);
  return NewShareRoundPolicy(std::move(share), options);
}

std::unique_ptr<RoundPolicy> NewShareRoundPolicy(std::unique_ptr<SharePolicy> share,
                                                 const PolicyOptions& options) {
  const std::string& level = options.choice("level");
  const double round = options.number("round");
  placement::RoundingOptions rounding;
  rounding.quantum_s = options.number("quantum");
  rounding.move_to_faster = options.flag("move");
  rounding.spread_min = options.number("spread_min");
  rounding.spread_wait_s = options.number("spread_wait");
  rounding.type_affine = options.flag("affine");
  rounding.spread_idle = options.flag("spread_idle");
  rounding.keep_finishing = options.flag("keep_finishing");
  rounding.keep_restarts = options.number("keep_restarts");
  MidroundOptions midround;
  midround.on = options.flag("midround");
  midround.min_left = options.number("midround_min");
  return std::make_unique<ShareRoundPolicy>(options.full_name(), std::move(share),
                                            level == "tenant", round, options.flag("demands"),
                                            options.number("resolve"),
                                            options.number("resolve_stranded"), rounding, midround);
}

}  // namespace fairgpu::policy
