// `synergy-greedy`: Synergy-GREEDY (OSDI'22 §3; specs/synergy.md §2): each job
// the base order picks is placed at its best-case CPU and memory demand
// (first fit in Synergy's code, best fit by default here) or, if no server
// has room for that, waits this round. It never lowers a demand, so CPUs or
// memory can run out while GPUs idle: the strawman TUNE improves on.
#include "policy/round_policies.h"
#include "policy/synergy.h"

namespace fairgpu::policy {
namespace {

class SynergyGreedy final : public synergy::SynergyPolicy {
 public:
  using SynergyPolicy::SynergyPolicy;

 private:
  void allocate(synergy::Round& r, const std::vector<std::size_t>& order) override {
    synergy::for_each_attempt(r, order, base(), false, [&r](const Job& j) {
      const synergy::Round::Demand d = r.best_demand(j);
      r.alloc(j, d.per_gpu, d.speedup);
    });
  }
};

}  // namespace

std::vector<OptionSpec> SynergyGreedyKeys() { return synergy::keys(); }
std::unique_ptr<RoundPolicy> NewSynergyGreedyPolicy(const PolicyOptions& options) {
  return std::make_unique<SynergyGreedy>(options);
}

}  // namespace fairgpu::policy
