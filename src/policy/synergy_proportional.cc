// `synergy-proportional`: Synergy's baseline "X+fair" (OSDI'22 §2;
// specs/synergy.md §2): every job the base order picks gets CPUs and memory
// in proportion to its GPUs (the cluster's CPUs and memory per GPU), so its
// speed is the profile's (multiplier 1). What TUNE must never fall below.
#include "policy/round_policies.h"
#include "policy/synergy.h"

namespace fairgpu::policy {
namespace {

class SynergyProportional final : public synergy::SynergyPolicy {
 public:
  using SynergyPolicy::SynergyPolicy;

 private:
  void allocate(synergy::Round& r, const std::vector<std::size_t>& order) override {
    synergy::for_each_attempt(r, order, base(), false,
                              [&r](const Job& j) { r.alloc(j, r.proportional(), 1.0); });
  }
};

}  // namespace

std::vector<OptionSpec> SynergyProportionalKeys() { return synergy::keys(); }
std::unique_ptr<RoundPolicy> NewSynergyProportionalPolicy(const PolicyOptions& options) {
  return std::make_unique<SynergyProportional>(options);
}

}  // namespace fairgpu::policy
