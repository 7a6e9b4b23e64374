// `synergy-opt`: Synergy-OPT (OSDI'22 §3; specs/synergy.md §2), the upper
// bound the paper measures TUNE against; simulation only.
//   Stage 1 (MILP on CBC, binaries Y[j][cell]): every runnable job gets one
//   cell of its sensitivity grid, sum_j g_j cpu(Y_j) <= free CPUs and
//   sum_j g_j mem(Y_j) <= free memory of the whole cluster, no job slower
//   than at its proportional cell; maximise sum_j tput_j(Y_j).
//   Stage 2 (MILP): GPUs n[s][j] of each job on each server within the
//   server's GPUs, CPUs and memory at the chosen cells, minimising the
//   (job, server) pairs used: the paper's "fewest split jobs" (Synergy's
//   code only checks feasibility).
// An upper bound: like Synergy's code, a job progresses at its stage-1
// multiplier even when stage 2 finds no packing, in which case the round's
// jobs take GPUs in index order and servers may hold more CPUs or memory than
// they have (visible in the allocation figures). Limits are deterministic
// (branch-and-bound nodes and a relative gap, never wall time), so runs
// repeat exactly. Runnable jobs as in Synergy's code (GPU demand fits the
// free GPUs, in base order).
#include <algorithm>
#include <cmath>
#include <tuple>

#include "fairgpu/lp.h"
#include "policy/round_policies.h"
#include "policy/synergy.h"

namespace fairgpu::policy {
namespace synergy {

namespace {
constexpr int kMaxNodes = 500;
constexpr double kGap = 1e-4;
}  // namespace

// First fit decreasing (by CPUs, then memory, then GPUs): every job whole on
// one server, or {} if that fails. When it succeeds no job is split, which is
// stage 2's optimum, so the MILP is needed only when it fails.
std::vector<std::vector<int>> pack_unsplit(const std::vector<int>& job_gpus,
                                           const std::vector<PerGpu>& job_cells,
                                           const std::vector<OptServer>& servers,
                                           const std::vector<std::vector<bool>>& allowed) {
  const std::size_t nj = job_gpus.size(), ns = servers.size();
  std::vector<std::size_t> order(nj);
  for (std::size_t j = 0; j < nj; ++j) order[j] = j;
  auto need = [&](std::size_t j) {
    return std::make_tuple(job_gpus[j] * job_cells[j].cpus, job_gpus[j] * job_cells[j].memory_gb,
                           job_gpus[j]);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return need(a) > need(b); });
  std::vector<OptServer> left = servers;
  std::vector<std::vector<int>> out(nj, std::vector<int>(ns, 0));
  for (std::size_t j : order) {
    const double cpus = job_gpus[j] * job_cells[j].cpus;
    const double memory = job_gpus[j] * job_cells[j].memory_gb;
    std::size_t s = 0;
    while (s < ns && !(allowed[j][s] && left[s].gpus >= job_gpus[j] &&
                       left[s].cpus + 1e-9 >= cpus && left[s].memory_gb + 1e-9 >= memory))
      ++s;
    if (s == ns) return {};
    left[s].gpus -= job_gpus[j];
    left[s].cpus -= cpus;
    left[s].memory_gb -= memory;
    out[j][s] = job_gpus[j];
  }
  return out;
}

OptStage1 solve_opt_stage1(const std::vector<OptJob>& jobs, double cpus, double memory_gb) {
  OptStage1 out;
  if (jobs.empty()) return {true, {}, 0.0};
  // Identical jobs (same GPUs, cells and multipliers: same model and size)
  // form one group with integer counts per cell instead of binaries per job:
  // the same optimum without the symmetry that slows branch and bound.
  std::vector<std::size_t> group_of(jobs.size());
  std::vector<std::size_t> first;  // a representative job per group
  std::vector<int> size;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    std::size_t g = 0;
    while (g < first.size() &&
           !(jobs[first[g]].gpus == jobs[j].gpus && jobs[first[g]].tput == jobs[j].tput &&
             std::equal(jobs[j].cells.begin(), jobs[j].cells.end(), jobs[first[g]].cells.begin(),
                        jobs[first[g]].cells.end(), [](const PerGpu& a, const PerGpu& b) {
                          return a.cpus == b.cpus && a.memory_gb == b.memory_gb;
                        })))
      ++g;
    if (g == first.size()) {
      first.push_back(j);
      size.push_back(0);
    }
    group_of[j] = g;
    ++size[g];
  }
  LinearProgram lp;
  lp.maximize();
  std::vector<std::vector<int>> var(first.size());
  std::vector<int> cpu_vars, mem_vars;
  std::vector<double> cpu_coefs, mem_coefs;
  for (std::size_t g = 0; g < first.size(); ++g) {
    const OptJob& job = jobs[first[g]];
    std::vector<int> all;
    std::vector<double> ones;
    for (std::size_t c = 0; c < job.cells.size(); ++c) {
      const PerGpu& cell = job.cells[c];
      // Among equally fast cells the one using the least (a tiny tie-break
      // well below any difference in the tables' multipliers).
      const double use =
          1e-7 * (cell.cpus / std::max(cpus, 1e-9) + cell.memory_gb / std::max(memory_gb, 1e-9));
      const int v = lp.add_variable(0.0, size[g], job.tput[c] - use, true);
      var[g].push_back(v);
      all.push_back(v);
      ones.push_back(1.0);
      cpu_vars.push_back(v);
      cpu_coefs.push_back(job.gpus * cell.cpus);
      mem_vars.push_back(v);
      mem_coefs.push_back(job.gpus * cell.memory_gb);
    }
    lp.add_constraint(all, ones, size[g], size[g]);
  }
  lp.add_constraint(cpu_vars, cpu_coefs, -kInf, cpus + 1e-9);
  lp.add_constraint(mem_vars, mem_coefs, -kInf, memory_gb + 1e-9);
  LpSolveOptions o;
  o.max_nodes = kMaxNodes;
  o.relative_gap = kGap;
  const LpStatus st = lp.solve(o);
  if (st != LpStatus::kOptimal && st != LpStatus::kFeasible) return out;
  out.solved = true;
  // Hand each group's cells out to its jobs in job order, fastest cell first.
  std::vector<std::vector<std::pair<std::size_t, int>>> left(first.size());
  for (std::size_t g = 0; g < first.size(); ++g) {
    for (std::size_t c = 0; c < var[g].size(); ++c) {
      const int count = static_cast<int>(std::lround(lp.value(var[g][c])));
      if (count > 0) left[g].push_back({c, count});
    }
    const OptJob& job = jobs[first[g]];
    std::stable_sort(left[g].begin(), left[g].end(), [&](const auto& a, const auto& b) {
      return job.tput[a.first] > job.tput[b.first];
    });
  }
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    auto& cells = left[group_of[j]];
    if (cells.empty()) return {};  // rounding left a count short: treat as unsolved
    out.cell.push_back(cells.front().first);
    out.tput += jobs[j].tput[cells.front().first];
    if (--cells.front().second == 0) cells.erase(cells.begin());
  }
  return out;
}

std::vector<std::vector<int>> solve_opt_stage2(const std::vector<int>& job_gpus,
                                               const std::vector<PerGpu>& job_cells,
                                               const std::vector<OptServer>& servers,
                                               const std::vector<std::vector<bool>>& allowed) {
  const std::size_t nj = job_gpus.size(), ns = servers.size();
  if (nj == 0) return {};
  if (auto packed = pack_unsplit(job_gpus, job_cells, servers, allowed); !packed.empty())
    return packed;  // no job split: the minimum, no MILP needed
  LinearProgram lp;
  lp.minimize();
  std::vector<std::vector<int>> n(nj, std::vector<int>(ns, -1));
  std::vector<std::vector<int>> gpu_rows(ns), cpu_rows(ns), mem_rows(ns);
  std::vector<std::vector<double>> cpu_coef(ns), mem_coef(ns), gpu_coef(ns);
  for (std::size_t j = 0; j < nj; ++j) {
    std::vector<int> sum;
    std::vector<double> ones;
    for (std::size_t s = 0; s < ns; ++s) {
      if (!allowed[j][s] || servers[s].gpus == 0) continue;
      const double cap = std::min(job_gpus[j], servers[s].gpus);
      // A 1-GPU job's count is its own indicator of using the server.
      const int v = lp.add_variable(0.0, cap, job_gpus[j] == 1 ? 1.0 : 0.0, true);
      n[j][s] = v;
      sum.push_back(v);
      ones.push_back(1.0);
      gpu_rows[s].push_back(v);
      gpu_coef[s].push_back(1.0);
      cpu_rows[s].push_back(v);
      cpu_coef[s].push_back(job_cells[j].cpus);
      mem_rows[s].push_back(v);
      mem_coef[s].push_back(job_cells[j].memory_gb);
      if (job_gpus[j] > 1) {
        const int z = lp.add_variable(0.0, 1.0, 1.0, true);  // job j uses server s
        lp.add_constraint({v, z}, {1.0, -cap}, -kInf, 0.0);
      }
    }
    if (sum.empty()) return {};
    lp.add_constraint(sum, ones, job_gpus[j], job_gpus[j]);
  }
  for (std::size_t s = 0; s < ns; ++s) {
    if (gpu_rows[s].empty()) continue;
    lp.add_constraint(gpu_rows[s], gpu_coef[s], -kInf, servers[s].gpus);
    lp.add_constraint(cpu_rows[s], cpu_coef[s], -kInf, servers[s].cpus + 1e-9);
    lp.add_constraint(mem_rows[s], mem_coef[s], -kInf, servers[s].memory_gb + 1e-9);
  }
  LpSolveOptions o;
  o.max_nodes = kMaxNodes;
  o.relative_gap = kGap;
  const LpStatus st = lp.solve(o);
  if (st != LpStatus::kOptimal && st != LpStatus::kFeasible) return {};
  std::vector<std::vector<int>> out(nj, std::vector<int>(ns, 0));
  for (std::size_t j = 0; j < nj; ++j)
    for (std::size_t s = 0; s < ns; ++s)
      if (n[j][s] >= 0) out[j][s] = static_cast<int>(std::lround(lp.value(n[j][s])));
  return out;
}

}  // namespace synergy

namespace {

using synergy::PerGpu;
using synergy::Round;

class SynergyOpt final : public synergy::SynergyPolicy {
 public:
  using SynergyPolicy::SynergyPolicy;

 private:
  void allocate(Round& r, const std::vector<std::size_t>& order) override {
    const SchedulerState& s = r.state();
    const ClusterModel& m = *s.model;
    const std::vector<std::size_t> jobs = synergy::runnable(r, order);
    if (jobs.empty()) return;
    const PerGpu prop = r.proportional();
    double cpus = 0.0, memory = 0.0;
    int largest_gpus = 0;
    double largest_cpus = 0.0, largest_memory = 0.0;
    std::vector<synergy::OptServer> servers;
    for (std::uint32_t node = 0; node < r.num_nodes(); ++node) {
      const PerGpu f = r.free(node);
      cpus += f.cpus;
      memory += f.memory_gb;
      const Node& nd = m.cluster.nodes[node];
      largest_gpus = std::max(largest_gpus, nd.gpus);
      largest_cpus = std::max(largest_cpus, nd.cpus);
      largest_memory = std::max(largest_memory, nd.memory_gb);
      servers.push_back({r.free_gpus(node), f.cpus, f.memory_gb});
    }
    // Stage 1's cells: a job's grid cells no slower than its proportional
    // cell that one server could hold (a job needing several servers: no
    // more than proportional, as Synergy's demand rule).
    std::vector<synergy::OptJob> opt;
    for (std::size_t i : jobs) {
      const Job& j = s.jobs[i];
      synergy::OptJob o;
      o.gpus = j.workers;
      const SensitivityTable* t = synergy::table_for(s, j);
      if (!t) {
        o.cells = {prop};
        o.tput = {1.0};
      } else {
        const double floor_tput = t->at(prop.cpus, prop.memory_gb);
        for (std::size_t a = 0; a < t->cpu_per_gpu.size(); ++a)
          for (std::size_t b = 0; b < t->memory_gb_per_gpu.size(); ++b) {
            const PerGpu cell{t->cpu_per_gpu[a], t->memory_gb_per_gpu[b]};
            const double v = t->multiplier[a * t->memory_gb_per_gpu.size() + b];
            const bool fits =
                j.workers <= largest_gpus
                    ? j.workers * cell.cpus <= largest_cpus + 1e-9 &&
                          j.workers * cell.memory_gb <= largest_memory + 1e-9
                    : cell.cpus <= prop.cpus + 1e-9 && cell.memory_gb <= prop.memory_gb + 1e-9;
            if (fits && v >= floor_tput - 1e-12) {
              o.cells.push_back(cell);
              o.tput.push_back(v);
            }
          }
        if (o.cells.empty()) {  // the proportional cell is off the grid
          o.cells = {prop};
          o.tput = {floor_tput};
        }
      }
      opt.push_back(std::move(o));
    }
    synergy::OptStage1 st1 = synergy::solve_opt_stage1(opt, cpus, memory);
    std::vector<PerGpu> cell(jobs.size(), prop);
    std::vector<double> tput(jobs.size(), 1.0);
    if (st1.solved) {
      for (std::size_t k = 0; k < jobs.size(); ++k) {
        cell[k] = opt[k].cells[st1.cell[k]];
        tput[k] = opt[k].tput[st1.cell[k]];
      }
    }
    std::vector<int> gpus;
    std::vector<std::vector<bool>> allowed;
    for (std::size_t i : jobs) {
      gpus.push_back(s.jobs[i].workers);
      std::vector<bool> ok;
      for (std::uint32_t node = 0; node < r.num_nodes(); ++node)
        ok.push_back(r.usable(s.jobs[i], node));
      allowed.push_back(std::move(ok));
    }
    const auto packing = synergy::solve_opt_stage2(gpus, cell, servers, allowed);
    std::vector<std::uint32_t> index_order(r.num_nodes());
    for (std::uint32_t node = 0; node < r.num_nodes(); ++node) index_order[node] = node;
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      const Job& j = s.jobs[jobs[k]];
      std::vector<std::pair<std::uint32_t, int>> counts;
      if (!packing.empty()) {
        for (std::uint32_t node = 0; node < r.num_nodes(); ++node)
          if (packing[k][node] > 0) counts.push_back({node, packing[k][node]});
      } else {  // no packing: GPUs in index order, resources unchecked (upper bound)
        counts = synergy::take_gpus(index_order, j.workers, [&](std::uint32_t node) {
          return r.usable(j, node) ? r.free_gpus(node) : 0;
        });
        if (counts.empty()) continue;
      }
      r.place_on(j, counts, cell[k], tput[k]);
    }
  }
};

}  // namespace

std::vector<OptionSpec> SynergyOptKeys() { return synergy::keys(); }
std::unique_ptr<RoundPolicy> NewSynergyOptPolicy(const PolicyOptions& options) {
  return std::make_unique<SynergyOpt>(options);
}

}  // namespace fairgpu::policy
