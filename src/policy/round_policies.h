// Factories of the round policies and the keys each declares (registered by
// name in round_registry.cc; keys: policy_options.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fairgpu/policy.h"
#include "fairgpu/policy_options.h"
#include "fairgpu/scheduler.h"

namespace fairgpu::policy {

// A share policy (oef-*, gavel, gandiva-fair, max-min, max-sum-throughput) at
// tenant or job level. Its keys are the share round policy's, the defaults
// depending on the policy (gavel: job level, 360 s rounds).
std::vector<OptionSpec> ShareRoundPolicyKeys(const std::string& name);
std::unique_ptr<RoundPolicy> NewShareRoundPolicy(const std::string& name,
                                                 const PolicyOptions& options);
// The same for a share policy from outside the registry (a Python one,
// src/python/), with ShareRoundPolicyKeys("")' keys (OEF's defaults).
std::unique_ptr<RoundPolicy> NewShareRoundPolicy(std::unique_ptr<SharePolicy> share,
                                                 const PolicyOptions& options);

// Time-sharing policies: job level, gang scheduled, one file each. Those
// without keys of their own declare time_sharing_keys() (time_sharing.h).
std::vector<OptionSpec> AstraeaKeys();
std::unique_ptr<RoundPolicy> NewAstraeaPolicy(const PolicyOptions& options);
std::vector<OptionSpec> ThemisKeys();
std::unique_ptr<RoundPolicy> NewThemisPolicy(const PolicyOptions& options);
std::vector<OptionSpec> FtfKeys();
std::unique_ptr<RoundPolicy> NewFtfPolicy(const PolicyOptions& options);
std::vector<OptionSpec> TiresiasKeys();
std::unique_ptr<RoundPolicy> NewTiresiasPolicy(const PolicyOptions& options);
std::vector<OptionSpec> AlloxKeys();
std::unique_ptr<RoundPolicy> NewAlloxPolicy(const PolicyOptions& options);
std::unique_ptr<RoundPolicy> NewFifoPolicy(const PolicyOptions& options, bool backfill);
std::unique_ptr<RoundPolicy> NewYarnCsPolicy(const PolicyOptions& options);
std::unique_ptr<RoundPolicy> NewHivedPolicy(const PolicyOptions& options);
std::unique_ptr<RoundPolicy> NewDrfPolicy(const PolicyOptions& options);
std::vector<OptionSpec> SynergyProportionalKeys();
std::unique_ptr<RoundPolicy> NewSynergyProportionalPolicy(const PolicyOptions& options);
std::vector<OptionSpec> SynergyGreedyKeys();
std::unique_ptr<RoundPolicy> NewSynergyGreedyPolicy(const PolicyOptions& options);
std::vector<OptionSpec> SynergyTuneKeys();
std::unique_ptr<RoundPolicy> NewSynergyTunePolicy(const PolicyOptions& options);
std::vector<OptionSpec> SynergyOptKeys();
std::unique_ptr<RoundPolicy> NewSynergyOptPolicy(const PolicyOptions& options);
std::vector<OptionSpec> ShockwaveKeys();
std::unique_ptr<RoundPolicy> NewShockwavePolicy(const PolicyOptions& options);
std::vector<OptionSpec> OsspKeys();
std::unique_ptr<RoundPolicy> NewOsspPolicy(const PolicyOptions& options);
// gandiva-fair:mechanism=stride (gandiva_stride.cc): job-level stride
// scheduling, tickets = gang size; reads the share round policy's `round`.
std::unique_ptr<RoundPolicy> NewGandivaStridePolicy(const PolicyOptions& options);

}  // namespace fairgpu::policy
