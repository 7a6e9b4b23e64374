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

// Time-sharing policies: job level, gang scheduled, one file each.
std::unique_ptr<RoundPolicy> NewAstraeaPolicy(const RoundPolicyOptions& options);
std::unique_ptr<RoundPolicy> NewThemisPolicy(const RoundPolicyOptions& options);
std::unique_ptr<RoundPolicy> NewFtfPolicy(const RoundPolicyOptions& options);
std::unique_ptr<RoundPolicy> NewTiresiasPolicy(const RoundPolicyOptions& options);
std::unique_ptr<RoundPolicy> NewAlloxPolicy(const RoundPolicyOptions& options);
std::unique_ptr<RoundPolicy> NewFifoPolicy(const RoundPolicyOptions& options, bool backfill);
std::unique_ptr<RoundPolicy> NewYarnCsPolicy(const RoundPolicyOptions& options);
std::unique_ptr<RoundPolicy> NewHivedPolicy(const RoundPolicyOptions& options);
std::unique_ptr<RoundPolicy> NewDrfPolicy(const RoundPolicyOptions& options);

}  // namespace fairgpu::policy
