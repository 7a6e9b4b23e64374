#include <chrono>
#include <stdexcept>

#include "fairgpu/policy.h"
#include "policy/share_policies.h"

namespace fairgpu {

void PolicyRegistry::add(PolicyInfo info) {
  if (find(info.name)) throw std::logic_error("policy registered twice: " + info.name);
  policies_.push_back(std::move(info));
}

const PolicyInfo* PolicyRegistry::find(std::string_view name) const {
  for (const auto& p : policies_)
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> PolicyRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& p : policies_) out.push_back(p.name);
  return out;
}

const PolicyRegistry& PolicyRegistry::builtin() {
  static const PolicyRegistry registry = [] {
    PolicyRegistry r;
    r.add({"oef-noncoop",
           "OEF non-cooperative (eq. 9): max total normalised throughput, equal for every "
           "(virtual) tenant; strategy-proof",
           policy::NewOefNonCooperative});
    r.add({"oef-coop",
           "OEF cooperative (eq. 10): max total normalised throughput subject to envy-freeness; "
           "EF + SI + optimal efficiency under EF",
           policy::NewOefCooperative});
    r.add({"gavel",
           "Gavel heterogeneity-aware max-min fairness of throughput normalised by the equal "
           "split, with progressive filling",
           policy::NewGavel});
    r.add({"gandiva-fair",
           "Gandiva_fair: equal split, then greedy second-price trading of slow for fast GPU "
           "share",
           policy::NewGandivaFair});
    r.add({"max-min",
           "heterogeneity-unaware weighted max-min fairness of device counts (equal split of "
           "every type)",
           policy::NewMaxMin});
    r.add({"max-sum-throughput",
           "maximise total normalised throughput only (no fairness): the efficiency upper bound",
           policy::NewMaxSumThroughput});
    return r;
  }();
  return registry;
}

std::unique_ptr<SharePolicy> make_share_policy(std::string_view name) {
  const PolicyInfo* info = PolicyRegistry::builtin().find(name);
  return info ? info->make() : nullptr;
}

ShareAllocation run_share_policy(const SharePolicy& policy, const ShareProblem& problem) {
  auto start = std::chrono::steady_clock::now();
  ShareAllocation out;
  out.x = policy.allocate(problem);
  out.solve_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace fairgpu
