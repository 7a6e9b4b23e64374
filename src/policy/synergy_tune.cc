// `synergy-tune`: Synergy-TUNE (OSDI'22 §3; specs/synergy.md §2), the
// paper's near-optimal online allocator. For each job the base order picks:
//   1. place it at its best-case CPU and memory demand if some server has
//      room (its speedup applies);
//   2. else, if that demand is above the GPU-proportional share on any
//      resource, lower it to the proportional share (speedup 1) and retry;
//   3. else take the GPUs anyway: on the chosen server(s), jobs placed there
//      this round that hold more than their proportional share are shrunk to
//      min(own demand, proportional), in the order of Synergy's code (fewest
//      servers first, then most CPUs per GPU, then most memory per GPU),
//      until the job's demand fits; then place it.
// Guarantee: no job placed in a round holds less than min(best-case demand,
// proportional share) of CPUs or memory per GPU on any server, so none runs
// slower than under GPU-proportional allocation (tested as a property).
// Choices: the candidate server of step 3 is the one with the fewest free
// GPUs that still has the job's GPUs (Synergy's order for 1-GPU jobs; its
// code takes the first such server for larger jobs, as placement=first-fit
// does here); a job whose GPUs no single server has takes them in index
// order (first fit) or from the servers with the most free GPUs (best fit).
#include <algorithm>
#include <tuple>

#include "policy/round_policies.h"
#include "policy/synergy.h"

namespace fairgpu::policy {
namespace {

using synergy::PerGpu;
using synergy::Round;

constexpr double kEps = 1e-9;

class SynergyTune final : public synergy::SynergyPolicy {
 public:
  using SynergyPolicy::SynergyPolicy;

 private:
  void allocate(Round& r, const std::vector<std::size_t>& order) override {
    synergy::for_each_attempt(r, order, base(), true, [&r](const Job& j) { tune(r, j); });
  }

  static void tune(Round& r, const Job& j) {
    const Round::Demand best = r.best_demand(j);
    if (r.alloc(j, best.per_gpu, best.speedup)) return;
    const PerGpu prop = r.proportional();
    PerGpu d = best.per_gpu;
    double speedup = best.speedup;
    if (d.cpus > prop.cpus + kEps || d.memory_gb > prop.memory_gb + kEps) {
      d = prop;
      speedup = 1.0;
      if (r.alloc(j, d, speedup)) return;
    }
    // Step 3: the servers to take the GPUs from, then make room there.
    std::vector<std::pair<std::uint32_t, int>> targets = target_servers(r, j);
    if (targets.empty()) return;  // the job's GPU types have too few free GPUs
    for (const auto& [node, n] : targets) shrink_peers(r, node, n, d, prop);
    for (const auto& target : targets)
      if (r.free(target.first).cpus + kEps < d.cpus * target.second ||
          r.free(target.first).memory_gb + kEps < d.memory_gb * target.second)
        return;  // only where a server has less than proportional CPUs or memory in all
    r.place_on(j, targets, d, speedup);
  }

  // The servers (and GPUs from each) the job takes in step 3.
  static std::vector<std::pair<std::uint32_t, int>> target_servers(const Round& r, const Job& j) {
    const auto nodes = static_cast<std::uint32_t>(r.num_nodes());
    const bool first_fit = r.fit() == synergy::Fit::kFirst;
    std::uint32_t chosen = nodes;
    for (std::uint32_t node = 0; node < nodes; ++node) {
      if (!r.usable(j, node) || r.free_gpus(node) < j.workers) continue;
      if (chosen == nodes) chosen = node;
      if (first_fit && j.workers > 1) break;
      if (r.free_gpus(node) < r.free_gpus(chosen)) chosen = node;
    }
    if (chosen != nodes) return {{chosen, j.workers}};
    std::vector<std::uint32_t> order;
    for (std::uint32_t node = 0; node < nodes; ++node)
      if (r.usable(j, node) && r.free_gpus(node) > 0) order.push_back(node);
    if (!first_fit)
      std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return r.free_gpus(a) > r.free_gpus(b);
      });
    auto room = [&r](std::uint32_t node) { return r.free_gpus(node); };
    if (const Cluster& c = r.state().model->cluster; c.gangs_spread_evenly)
      return synergy::take_gpus_evenly(order, j.workers, room, c);
    return synergy::take_gpus(order, j.workers, room);
  }

  // Shrinks jobs placed on `node` this round to min(held, proportional) until
  // `n` GPUs' worth of `d` fits there.
  static void shrink_peers(Round& r, std::uint32_t node, int n, PerGpu d, PerGpu prop) {
    auto need = [&] {
      const PerGpu f = r.free(node);
      return PerGpu{d.cpus * n - f.cpus, d.memory_gb * n - f.memory_gb};
    };
    if (need().cpus <= kEps && need().memory_gb <= kEps) return;
    std::vector<std::size_t> peers;
    for (std::size_t p = 0; p < r.placed().size(); ++p)
      if (r.placed()[p].gpus_on(node) > 0) peers.push_back(p);
    std::stable_sort(peers.begin(), peers.end(), [&](std::size_t a, std::size_t b) {
      const auto& x = r.placed()[a];
      const auto& y = r.placed()[b];
      return std::make_tuple(x.parts.size(), -x.held.cpus, -x.held.memory_gb) <
             std::make_tuple(y.parts.size(), -y.held.cpus, -y.held.memory_gb);
    });
    for (std::size_t p : peers) {
      const PerGpu now = need();
      if (now.cpus <= kEps && now.memory_gb <= kEps) break;
      const PerGpu held = r.placed()[p].held;
      const PerGpu lowered{std::min(held.cpus, prop.cpus),
                           std::min(held.memory_gb, prop.memory_gb)};
      if (lowered.cpus >= held.cpus && lowered.memory_gb >= held.memory_gb) continue;  // no excess
      r.resize(p, lowered, 1.0);
    }
  }
};

}  // namespace

std::vector<OptionSpec> SynergyTuneKeys() { return synergy::keys(); }
std::unique_ptr<RoundPolicy> NewSynergyTunePolicy(const PolicyOptions& options) {
  return std::make_unique<SynergyTune>(options);
}

}  // namespace fairgpu::policy
