// `allox`: AlloX (Le et al., EuroSys 2020), §3 (min-cost bipartite matching
// for a batch, its online extension) and §4 (fairness knob α over tenants'
// progress); Astraea §6.1.5 uses it as a baseline, docs/design.md §3.
//
// Non-preemptive (§3.2: Kubernetes cannot preempt, migration is costly): a
// started job keeps its GPUs to the end (its lease is renewed at every lease
// end). At a scheduling point where a job waits and a GPU is free:
//
// 1. Slots. Every GPU is a slot (the paper's "machine") with an offset: the
//    remaining time of the job running on it (restart overhead still to pay
//    plus remaining iterations at its current rate), 0 when free.
// 2. Matching (§3.1 + online extension). Position k of a slot is the k-th
//    from the END of its queue; a job there adds k * p_{j,t} + o_s to the sum
//    of JCTs (it delays itself and the k-1 jobs behind it by p_{j,t}, and
//    waits o_s for the running job): the paper's cost plus its online
//    "correction" by the running job's remaining time. p_{j,t} = restart
//    overhead + remaining iterations / rate_best[t] (the time it would hold
//    the slot; the paper has no overhead). Every waiting job is matched to
//    exactly one (slot, position), min total cost, by LEMON's NetworkSimplex
//    on integer costs (milliseconds).
//    Exact reductions, so 500 jobs x 1,500 slots solve in tens of ms:
//    - Slots of one type with the same offset (all free GPUs of a type, the
//      GPUs of one running gang) are interchangeable: one node per
//      (group, position) with capacity = the group's size.
//    - A job only gets arcs to its cheapest positions, walked in its own cost
//      order until their capacity reaches N (units to match): in an optimum
//      every position cheaper for j than its own is taken by someone else,
//      and at most N - 1 units are others', so one of those N is free and
//      moving j there costs no more.
// 3. Starts (§3.2: "find the highest-priority job whose machine is idle").
//    In an optimum a group's positions fill level by level (moving a job from
//    k+1 to an open k saves p > 0), so a free group of f GPUs holding levels
//    1..L has L jobs queued on some of its slots and L-1 on the others. The
//    job at the FRONT of each free slot's queue starts now: the units of the
//    free group in descending position, the first f of them (ties in a level,
//    where the slot split is the solver's arbitrary choice at equal cost, go
//    to the shorter job, then the earlier one). Jobs matched to busy slots or
//    behind a front wait; the matching is redone at every scheduling point
//    (renewals never change it, GPUs only free up at completions).
//    For a batch arriving together with scheduling points at completions
//    this is the paper's optimal schedule: the rest of the current optimum is
//    still feasible at the next point, so re-matching never costs more.
//
// Multi-GPU jobs (our extension; the paper has single-device jobs only): a
// gang of g workers is g units of demand. It may use only one type, chosen
// before the matching as the one where it would finish first if started as
// soon as g GPUs there are free (g-th smallest offset + p; ties to the
// faster type), and the types a single gang fits (capacity >= g). A unit at
// position k of a slot with offset o costs (k-1) p + (p + o)/g: it delays the
// k-1 jobs behind it on that slot, and the gang's own JCT is counted once,
// as the mean over its units (g = 1 gives the paper's k p + o). At most
// min(g, group size) of its units go to one (group, position). The matching
// is then a relaxation for gangs (it does not align a gang's units in time).
// A gang starts, all or nothing via GangRound::grant(job, lease_end, type),
// only when all its g units are fronts of free slots of its type; its fronts
// stay idle until then (the matching reserves them for it). A gang larger
// than any single type (it must span types) is left out of the matching and
// started, in arrival order, whenever enough GPUs are free.
//
// Fairness (§4): only jobs of the ceil(α n) tenants with the lowest progress
// are matched (n = tenants with waiting jobs; ties to the lower tenant
// index); the others are not input at all. A tenant's progress sums over its
// running jobs the dominant share of the job's most efficient configuration,
// d = g / GPUs of its best type, scaled by p_best / p_current = rate now /
// rate_best on the best type. Our model has no CPU or memory demands, so the
// dominant share is the GPU share. α = 1 keeps every tenant: pure JCT
// minimisation.
#include <lemon/network_simplex.h>
#include <lemon/smart_graph.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include "placement/gang_round.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy {
namespace {

constexpr double kCostPerSecond = 1000.0;  // integer arc costs in milliseconds

// A non-negative cost as an integer, `cap` where it is larger (or NaN).
long long integer_cost(double x, double cap) {
  return x < cap ? std::llround(x) : std::llround(cap);
}
constexpr std::size_t kNoType = std::numeric_limits<std::size_t>::max();

// Seconds until a running job frees its GPUs at its current rate.
double remaining_time(const SchedulerState& s, const Job& j) {
  if (!(j.rate > 0.0)) return 0.0;
  const double elapsed = std::max(0.0, s.now - j.settled_at);
  const double overhead = std::max(0.0, j.overhead_left - elapsed);
  return overhead + (j.work - done_now(s, j)) / j.rate;
}

std::size_t best_type(const Job& j) {
  std::size_t best = 0;
  for (std::size_t t = 1; t < j.rate_best.size(); ++t)
    if (j.rate_best[t] > j.rate_best[best]) best = t;
  return best;
}

struct Group {
  std::size_t type;
  double offset;
  int size;
  bool free;
  std::vector<int> level_node;  // graph node of position k+1, created lazily
};

struct Waiting {
  std::size_t job;
  int g;
  std::vector<double> p;  // per type; < 0 where the job may not go
};

struct Unit {
  int level;
  double p;
  std::size_t w;  // index into the waiting list
};

class Allox final : public TimeSharingPolicy {
 public:
  explicit Allox(const PolicyOptions& o) : TimeSharingPolicy(o), alpha_(o.number("alpha")) {}

  bool renews_first() const override { return true; }

  RoundPlan plan(const SchedulerState& s) override {
    placement::GangRound round = gang_round(s);
    if (!round.worth_planning()) return {};
    const double lease_end = s.now + lease();
    round.renew_all(lease_end);
    if (round.total_free() == 0) return round.plan();

    const std::vector<std::size_t> considered = fairness_filter(s, round);
    if (considered.empty()) return round.plan();
    const std::size_t k = s.model->capacity.size();

    // Slot groups: per type the free GPUs, then the running jobs' GPUs by
    // (type, offset).
    std::vector<Group> groups;
    for (std::size_t t = 0; t < k; ++t)
      if (round.free_of_type(t) > 0) groups.push_back({t, 0.0, round.free_of_type(t), true, {}});
    std::map<std::pair<std::size_t, double>, int> busy;
    for (std::size_t i : s.running) {
      const double o = remaining_time(s, s.jobs[i]);
      for (DeviceRef d : s.jobs[i].devices) ++busy[{s.type_of(d), o}];
    }
    for (const auto& [key, n] : busy) groups.push_back({key.first, key.second, n, false, {}});
    std::vector<std::vector<std::size_t>> of_type(k);  // free group first, then by offset
    for (std::size_t gi = 0; gi < groups.size(); ++gi) of_type[groups[gi].type].push_back(gi);

    std::vector<Waiting> waiting;
    std::vector<std::size_t> spanning;  // gangs no single type can hold
    for (std::size_t i : considered) {
      const Job& j = s.jobs[i];
      Waiting w{i, j.workers, std::vector<double>(k, -1.0)};
      for (std::size_t t = 0; t < k; ++t)
        if (j.runs_on(t) && s.model->capacity[t] >= j.workers)
          w.p[t] = j.restart_overhead_s + j.remaining() / j.rate_best[t];
      if (j.workers > 1) restrict_gang(groups, of_type, &w);
      if (std::none_of(w.p.begin(), w.p.end(), [](double p) { return p >= 0.0; })) {
        spanning.push_back(i);
        continue;
      }
      waiting.push_back(std::move(w));
    }

    if (!waiting.empty()) start_matched(s, round, lease_end, groups, of_type, waiting);
    for (std::size_t i : spanning) round.grant(i, lease_end);
    RoundPlan p = round.plan();
    p.recomputed = true;
    return p;
  }

 private:
  // The queued jobs of the ceil(α n) tenants with the lowest progress, in
  // arrival order.
  std::vector<std::size_t> fairness_filter(const SchedulerState& s,
                                           const placement::GangRound& round) const {
    std::vector<std::size_t> queued;
    for (std::size_t i : round.decidable())
      if (s.jobs[i].state == JobState::kQueued) queued.push_back(i);
    if (alpha_ >= 1.0) return queued;
    std::vector<double> progress(s.tenants.size(), 0.0);
    for (std::size_t i : s.running) {
      const Job& j = s.jobs[i];
      const std::size_t b = best_type(j);
      const double d = double(j.workers) / s.model->capacity[b];
      progress[j.tenant] += d * j.rate / j.rate_best[b];
    }
    std::vector<char> waits(s.tenants.size(), 0);
    for (std::size_t i : queued) waits[s.jobs[i].tenant] = 1;
    std::vector<std::size_t> tenants;
    for (std::size_t l = 0; l < waits.size(); ++l)
      if (waits[l]) tenants.push_back(l);
    std::stable_sort(tenants.begin(), tenants.end(),
                     [&](std::size_t a, std::size_t b) { return progress[a] < progress[b]; });
    const auto keep = static_cast<std::size_t>(
        std::max(1.0, std::ceil(alpha_ * double(tenants.size()) - 1e-9)));
    std::vector<char> chosen(s.tenants.size(), 0);
    for (std::size_t r = 0; r < std::min(keep, tenants.size()); ++r) chosen[tenants[r]] = 1;
    std::erase_if(queued, [&](std::size_t i) { return !chosen[s.jobs[i].tenant]; });
    return queued;
  }

  // A gang keeps only the type where it would finish first if started as
  // soon as g GPUs there are free.
  static void restrict_gang(const std::vector<Group>& groups,
                            const std::vector<std::vector<std::size_t>>& of_type, Waiting* w) {
    std::size_t chosen = kNoType;
    double best = 0.0;
    for (std::size_t t = 0; t < w->p.size(); ++t) {
      if (w->p[t] < 0.0) continue;
      std::vector<std::pair<double, int>> slots;
      for (std::size_t gi : of_type[t]) slots.emplace_back(groups[gi].offset, groups[gi].size);
      std::sort(slots.begin(), slots.end());
      double ready = 0.0;
      int have = 0;
      for (const auto& [o, n] : slots) {
        ready = o;
        if ((have += n) >= w->g) break;
      }
      const double finish = ready + w->p[t];
      // Types are ordered slowest first: `<=` sends ties to the faster one.
      if (chosen == kNoType || finish <= best) {
        chosen = t;
        best = finish;
      }
    }
    for (std::size_t t = 0; t < w->p.size(); ++t)
      if (t != chosen) w->p[t] = -1.0;
  }

  void start_matched(const SchedulerState& s, placement::GangRound& round, double lease_end,
                     std::vector<Group>& groups, const std::vector<std::vector<std::size_t>>& of_type,
                     const std::vector<Waiting>& waiting) const {
    long long units = 0;
    for (const Waiting& w : waiting) units += w.g;

    // Nodes: waiting jobs 0..W-1, the sink W, then (group, position) nodes.
    struct ArcSpec {
      int from, to;
      long long cap, cost;
      double seconds;  // the cost in seconds
      std::size_t group;
      int level;
    };
    std::vector<ArcSpec> arcs;
    const int sink = static_cast<int>(waiting.size());
    int nodes = sink + 1;
    // Seconds; the first term only from level 2 on, so an infinite p (a
    // job of absurd length) gives an infinite cost, not 0 * inf = NaN.
    auto seconds_of = [&](const Waiting& w, const Group& g, int level) {
      const double p = w.p[g.type];
      return (level > 1 ? (level - 1) * p : 0.0) + (p + g.offset) / w.g;
    };
    // The matching's candidate order, in milliseconds (saturated, never an
    // overflowing conversion).
    auto cost_of = [&](const Waiting& w, const Group& g, int level) {
      return integer_cost(seconds_of(w, g, level) * kCostPerSecond, std::ldexp(1.0, 62));
    };
    struct Next {
      long long cost;
      std::size_t group;
      int level;
      bool operator>(const Next& o) const {
        return cost != o.cost ? cost > o.cost
                              : (group != o.group ? group > o.group : level > o.level);
      }
    };
    std::vector<Next> heap;
    for (std::size_t wi = 0; wi < waiting.size(); ++wi) {
      const Waiting& w = waiting[wi];
      heap.clear();
      for (std::size_t t = 0; t < w.p.size(); ++t)
        if (w.p[t] >= 0.0)
          for (std::size_t gi : of_type[t]) heap.push_back({cost_of(w, groups[gi], 1), gi, 1});
      std::make_heap(heap.begin(), heap.end(), std::greater<>());
      long long usable = 0;
      while (usable < units && !heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<>());
        const Next n = heap.back();
        heap.pop_back();
        Group& g = groups[n.group];
        while (static_cast<int>(g.level_node.size()) < n.level) {
          g.level_node.push_back(nodes);
          arcs.push_back({nodes, sink, g.size, 0, 0.0, n.group, 0});
          ++nodes;
        }
        const long long cap = std::min(w.g, g.size);
        arcs.push_back({static_cast<int>(wi), g.level_node[n.level - 1], cap, n.cost,
                        seconds_of(w, g, n.level), n.group, n.level});
        usable += w.g == 1 ? g.size : cap;
        heap.push_back({cost_of(w, g, n.level + 1), n.group, n.level + 1});
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
    }

    // NetworkSimplex's potentials start at +-(2^63 - 1) / 2 and add costs
    // along tree paths of at most `nodes` arcs: with a larger cost they
    // overflow (undefined; a job of duration_s 1e16 made it loop forever).
    // So nodes * max cost stays <= 2^60: in milliseconds whenever that holds
    // (any realistic trace, identical matchings), else in the finest unit
    // that keeps it, which only merges near-ties among absurdly long jobs.
    const double budget = std::ldexp(1.0, 60) / nodes;
    double max_seconds = 0.0;
    for (const ArcSpec& a : arcs) max_seconds = std::max(max_seconds, a.seconds);
    if (!(max_seconds * kCostPerSecond <= budget)) {
      const double per_second = budget / max_seconds;  // 0 when max_seconds is inf
      for (ArcSpec& a : arcs)
        a.cost = a.level == 0 ? 0 : integer_cost(a.seconds * per_second, budget);
    }

    lemon::SmartDigraph graph;
    graph.reserveNode(nodes);
    graph.reserveArc(static_cast<int>(arcs.size()));
    std::vector<lemon::SmartDigraph::Node> node(nodes);
    for (auto& v : node) v = graph.addNode();
    std::vector<lemon::SmartDigraph::Arc> arc(arcs.size());
    for (std::size_t a = 0; a < arcs.size(); ++a)
      arc[a] = graph.addArc(node[arcs[a].from], node[arcs[a].to]);
    lemon::SmartDigraph::ArcMap<long long> cap(graph), cost(graph);
    lemon::SmartDigraph::NodeMap<long long> supply(graph, 0);
    for (std::size_t a = 0; a < arcs.size(); ++a) {
      cap[arc[a]] = arcs[a].cap;
      cost[arc[a]] = arcs[a].cost;
    }
    for (std::size_t wi = 0; wi < waiting.size(); ++wi) supply[node[wi]] = waiting[wi].g;
    supply[node[sink]] = -units;
    lemon::NetworkSimplex<lemon::SmartDigraph, long long, long long> solver(graph);
    solver.upperMap(cap).costMap(cost).supplyMap(supply);
    if (solver.run() != decltype(solver)::OPTIMAL)
      throw std::logic_error("allox: the matching has no optimal solution");

    // The units on free slots, per type; the fronts are the first `size`.
    std::vector<std::vector<Unit>> free_units(s.model->capacity.size());
    for (std::size_t a = 0; a < arcs.size(); ++a) {
      if (arcs[a].level == 0 || !groups[arcs[a].group].free) continue;
      const long long f = solver.flow(arc[a]);
      const std::size_t wi = static_cast<std::size_t>(arcs[a].from);
      const std::size_t t = groups[arcs[a].group].type;
      for (long long u = 0; u < f; ++u) free_units[t].push_back({arcs[a].level, waiting[wi].p[t], wi});
    }
    std::vector<int> fronts(waiting.size(), 0);
    for (std::size_t t = 0; t < free_units.size(); ++t) {
      auto& us = free_units[t];
      std::sort(us.begin(), us.end(), [](const Unit& a, const Unit& b) {
        if (a.level != b.level) return a.level > b.level;
        if (a.p != b.p) return a.p < b.p;
        return a.w < b.w;
      });
      const std::size_t f = static_cast<std::size_t>(round.free_of_type(t));
      if (us.size() > f) us.resize(f);
      for (const Unit& u : us) ++fronts[u.w];
      for (const Unit& u : us) {
        const Waiting& w = waiting[u.w];
        if (fronts[u.w] != w.g || round.granted(w.job)) continue;
        // A gang that would run spread below spread_min waits (GangRound).
        if (!round.grant(w.job, lease_end, t) && !round.holds_out(w.job, t))
          throw std::logic_error("allox: a job at the front of free slots does not fit");
      }
    }
  }

  double alpha_;
};

}  // namespace

std::vector<OptionSpec> AlloxKeys() {
  auto keys = time_sharing_keys();
  keys.push_back(number_option("alpha", 1.0,
                               "fraction of tenants, lowest progress first, considered", 0.0,
                               1.0, true));
  return keys;
}

std::unique_ptr<RoundPolicy> NewAlloxPolicy(const PolicyOptions& options) {
  return std::make_unique<Allox>(options);
}

}  // namespace fairgpu::policy
