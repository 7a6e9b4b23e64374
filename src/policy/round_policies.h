// Factories of the round policies (registered by name in round_registry.cc).
#pragma once

#include <memory>
#include <string>

#include "fairgpu/scheduler.h"

namespace fairgpu::policy {

// A share policy (oef-*, gavel, gandiva-fair, max-min, max-sum-throughput) at
// tenant or job level.
std::unique_ptr<RoundPolicy> NewShareRoundPolicy(const std::string& name,
                                                 const RoundPolicyOptions& options);

}  // namespace fairgpu::policy
