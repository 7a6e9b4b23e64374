// What Synergy's four allocators share (Mohan et al., "Looking Beyond GPUs for
// DNN Scheduling on Multi-Tenant Clusters", OSDI'22; specs/synergy.md): the
// options, the base orders, the per-round book of free GPUs, CPUs and memory
// per server, and placement at a per-GPU demand (best fit or first fit).
// The policies (synergy_proportional.cc, synergy_greedy.cc, synergy_tune.cc,
// synergy_opt.cc) differ only in how they turn the runnable jobs into
// placements.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "fairgpu/policy_options.h"
#include "fairgpu/scheduler.h"
#include "policy/time_sharing.h"

namespace fairgpu::policy::synergy {

enum class Base { kFifo, kLas, kSrtf, kFtf };
enum class Fit { kBest, kFirst };
enum class Mode { kPaper, kCompat };

// Keys every synergy policy declares: level, round (= lease, 300 s), base,
// placement (auto = best-fit in mode=paper, first-fit in mode=compat), mode.
std::vector<OptionSpec> keys();

// The job's sensitivity table: on the GPU type with the most GPUs among those
// it runs on (nullptr: insensitive).
const SensitivityTable* table_for(const SchedulerState& s, const Job& j);

// CPUs and memory per GPU.
struct PerGpu {
  double cpus = 0.0, memory_gb = 0.0;
};

// A job placed this round: its GPUs per server and what each GPU holds.
struct Placed {
  std::size_t job = 0;
  std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> parts;  // node -> GPUs
  PerGpu held;           // per GPU on every node (Synergy keeps them proportional to GPUs)
  double speedup = 1.0;  // compat: the two-point speedup of `held`
  int gpus_on(std::uint32_t node) const;
};

// One round's book: free devices, CPUs and memory per server, the jobs placed.
class Round {
 public:
  Round(const SchedulerState& s, Fit fit, Mode mode);

  const SchedulerState& state() const { return s_; }
  Fit fit() const { return fit_; }
  Mode mode() const { return mode_; }
  int free_gpus() const { return free_total_; }  // all servers
  int free_gpus(std::uint32_t node) const { return int(free_dev_[node].size()); }
  PerGpu free(std::uint32_t node) const { return free_[node]; }
  PerGpu proportional(std::uint32_t node) const;         // the server's CPUs and memory per GPU
  PerGpu proportional() const { return cluster_prop_; }  // the cluster's (total / GPUs)
  std::size_t num_nodes() const { return free_dev_.size(); }
  const std::vector<Placed>& placed() const { return placed_; }

  // Job-level best-case demand per GPU (specs/synergy.md §1 "job-level
  // demand"): the table's, capped so the whole job fits one server when its
  // GPUs do; proportional when it needs several servers and more than
  // proportional; and the two-point speedup Synergy's code gives it.
  struct Demand {
    PerGpu per_gpu;
    double speedup = 1.0;
  };
  Demand best_demand(const Job& j) const;

  // Places `j` with `d` per GPU on servers with room for it (best fit: one
  // server with the least room left, else spread over the servers with the
  // most free GPUs; first fit: GPUs in index order on servers whose free
  // CPUs and memory cover d), or returns false and changes nothing.
  bool alloc(const Job& j, PerGpu d, double speedup);
  // Places `j` on `count` free GPUs of each server (its own first) with `d`
  // per GPU (resources are not checked: OPT's fallback may over-commit a
  // server).
  void place_on(const Job& j, const std::vector<std::pair<std::uint32_t, int>>& counts, PerGpu d,
                double speedup);
  bool usable(const Job& j, std::uint32_t node) const;  // the job runs on the server's type
  // Lowers placed job `p` (index into placed()) to `d` per GPU on all its servers.
  void resize(std::size_t p, PerGpu d, double speedup);

  // The plan: every placed job with its resources; compat mode adds
  // Synergy's simulator semantics (speedup as the rate multiplier, no restart
  // cost, finish at the round end).
  RoundPlan plan(double lease_end) const;

 private:
  // `count` free GPUs of `node` for `j`: those it held first (so an
  // unchanged placement is a renewal), then in index order.
  std::vector<std::uint32_t> pick_devices(const Job& j, std::uint32_t node, int count) const;

  const SchedulerState& s_;
  Fit fit_;
  Mode mode_;
  std::vector<std::vector<std::uint32_t>> free_dev_;  // per node, ascending
  int free_total_ = 0;                                // sum of free_dev_'s sizes
  std::vector<PerGpu> free_;
  PerGpu cluster_prop_;
  struct {
    int gpus = 0;
    double cpus = 0.0, memory_gb = 0.0;
  } largest_;  // the largest GPU count, CPUs and memory of any server (best_demand's caps)
  std::vector<Placed> placed_;
};

// GPUs from `nodes` in the given order, up to room(node) from each, until
// `gpus` are taken: (node, GPUs) pairs, or none when the nodes fall short.
template <class Room>
std::vector<std::pair<std::uint32_t, int>> take_gpus(const std::vector<std::uint32_t>& nodes,
                                                     int gpus, Room room) {
  std::vector<std::pair<std::uint32_t, int>> out;
  for (std::uint32_t node : nodes) {
    if (gpus == 0) break;
    const int take = std::min(gpus, room(node));
    if (take <= 0) continue;
    out.push_back({node, take});
    gpus -= take;
  }
  if (gpus > 0) out.clear();
  return out;
}

// The same where the cluster spreads gangs evenly (Cluster::
// gangs_spread_evenly): `gpus` / k from each of the first k nodes in the
// given order that all have that much room and one GPU type, for the fewest
// nodes k > 1 that can; none when no such nodes.
template <class Room>
std::vector<std::pair<std::uint32_t, int>> take_gpus_evenly(const std::vector<std::uint32_t>& nodes,
                                                            int gpus, Room room,
                                                            const Cluster& cluster) {
  for (int k = 2; k <= gpus; ++k) {
    if (gpus % k != 0) continue;
    const int per = gpus / k;
    for (std::size_t type = 0; type < cluster.num_types(); ++type) {
      std::vector<std::pair<std::uint32_t, int>> out;
      for (std::uint32_t node : nodes)
        if (cluster.nodes[node].type == type && room(node) >= per &&
            static_cast<int>(out.size()) < k)
          out.push_back({node, per});
      if (static_cast<int>(out.size()) == k) return out;
    }
  }
  return {};
}

// The active jobs whose lease ended, in the base order (specs/synergy.md §2):
// FIFO by arrival; LAS by (-priority, attained GPU service, arrival); SRTF by
// (-priority, remaining time at the best-case speedup, arrival); FTF by
// (-priority, rho = (now - arrival + remaining time) / isolated time,
// arrival), rho descending in mode=paper (the worst off first, as finish-time
// fairness means it) and ascending in mode=compat (Synergy's code). Priority
// is 1 for a job that has not run for 1000 h.
std::vector<std::size_t> base_order(const Round& r, Base base, Mode mode);

// Synergy's selection: walking the base order, the jobs whose GPU demand
// fits the free GPUs left (later, smaller jobs fill in).
std::vector<std::size_t> runnable(const Round& r, const std::vector<std::size_t>& order);

// The jobs an allocator tries this round, in the order it tries them:
// mode=paper: the runnable jobs (TUNE: sorted by GPU, CPU and memory demand,
// largest first, the paper's packing order); mode=compat: Synergy's code,
// which walks the whole base order for fifo, srtf and ftf and takes the
// runnable jobs for las (TUNE: re-sorted by GPU count, largest first).
// The allocator still skips a job whose GPUs no longer fit.
std::vector<std::size_t> attempt_order(const Round& r, const std::vector<std::size_t>& order,
                                       Base base, bool tune);

// Walks attempt_order(r, order, base, tune) and calls place(job) for each job
// whose GPU demand still fits the free GPUs.
template <class Place>
void for_each_attempt(Round& r, const std::vector<std::size_t>& order, Base base, bool tune,
                      Place place) {
  for (std::size_t i : attempt_order(r, order, base, tune)) {
    const Job& j = r.state().jobs[i];
    if (j.workers <= r.free_gpus()) place(j);
  }
}

// The common policy shell: options, interval, and plan() = order, then the
// policy's allocate().
class SynergyPolicy : public RoundPolicy {
 public:
  explicit SynergyPolicy(const PolicyOptions& o);
  std::string_view name() const override { return name_; }
  double interval() const override { return round_s_; }
  RoundPlan plan(const SchedulerState& s) override;
  // Event-cost simulation (docs/design.md §5). With base=fifo in mode=paper
  // plan() reads no time and no progress: the order is by arrival, and the
  // allocators see only the jobs, their devices and resources, and what
  // unexpired leases hold (SynergyOPT's limits are deterministic). A plan
  // at a point where every running lease ended that renews every running
  // job on its own devices with its own CPUs and memory (no start, the
  // executor's renewal) leaves those inputs as they were, so the next
  // point's plan is the same renewals, and so on until an event. Other
  // bases order by attained service, remaining time or rho, which age; not
  // claimed stable. mode=compat finishes jobs at the lease end (the
  // executor's renewal then moves their finish): neither.
  Stability stability(const SchedulerState&) const override {
    if (!steady_) return {};
    return {std::numeric_limits<double>::infinity(), round_s_, kUnset};
  }

 protected:
  // Places the jobs of this round on `r`, the active jobs in base order.
  virtual void allocate(Round& r, const std::vector<std::size_t>& order) = 0;
  Base base() const { return base_; }

 private:
  std::string name_;
  double round_s_;
  Base base_;
  Fit fit_;
  Mode mode_;
  bool steady_ = false;  // the last plan starts the stretch stability() describes
};

}  // namespace fairgpu::policy::synergy

namespace fairgpu::policy::synergy {

// Synergy-OPT's stage 1 (specs/synergy.md §2), a MILP on CBC: one cell
// (CPUs and memory per GPU) per job, the jobs' CPUs and memory within the
// cluster's free totals, maximising the sum of the jobs' throughput
// multipliers. A job's cells are those no slower than its proportional cell.
struct OptJob {
  int gpus = 1;
  std::vector<PerGpu> cells;
  std::vector<double> tput;  // multiplier of each cell
};
struct OptStage1 {
  bool solved = false;
  std::vector<std::size_t> cell;  // per job, index into its cells
  double tput = 0.0;              // sum of the chosen cells' multipliers
};
OptStage1 solve_opt_stage1(const std::vector<OptJob>& jobs, double cpus, double memory_gb);

// Stage 2: GPUs per job and server for the chosen cells, every server's
// GPUs, CPUs and memory respected, minimising the number of (job, server)
// pairs used, i.e. the paper's split jobs. Empty when infeasible or unsolved.
struct OptServer {
  int gpus = 0;
  double cpus = 0.0, memory_gb = 0.0;
};
std::vector<std::vector<int>> solve_opt_stage2(const std::vector<int>& job_gpus,
                                               const std::vector<PerGpu>& job_cells,
                                               const std::vector<OptServer>& servers,
                                               const std::vector<std::vector<bool>>& allowed);

}  // namespace fairgpu::policy::synergy
