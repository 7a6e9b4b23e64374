// Factories of the in-tree share policies, one per file in src/policy/.
// Only registry.cc calls these; everyone else goes through PolicyRegistry.
#pragma once

#include <memory>

#include "fairgpu/policy.h"

namespace fairgpu::policy {

std::unique_ptr<SharePolicy> NewOefNonCooperative();  // oef_noncoop.cc
std::unique_ptr<SharePolicy> NewOefCooperative();     // oef_coop.cc
std::unique_ptr<SharePolicy> NewGavel();              // gavel.cc
std::unique_ptr<SharePolicy> NewGavelSingleLevel();   // gavel.cc: Gavel's one-level LP (job level)
std::unique_ptr<SharePolicy> NewGandivaFair();        // gandiva_fair.cc
std::unique_ptr<SharePolicy> NewMaxMin();             // max_min.cc
std::unique_ptr<SharePolicy> NewMaxSumThroughput();   // max_sum.cc

}  // namespace fairgpu::policy
