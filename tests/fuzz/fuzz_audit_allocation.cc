// `fairgpu audit --allocation x.json` on the default problem
// (examples/allocate.json): parse_allocation, then the audit with the
// strategy-proofness probe of the policy the file names, if any.
#include <memory>

#include "fairgpu/allocation_io.h"
#include "fairgpu/audit.h"
#include "fairgpu/policy.h"
#include "fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fairgpu::ShareProblem problem = fairgpu::default_share_problem();
  fairgpu::fuzz::expect_input_error_or_success([&] {
    fairgpu::AllocationInput given =
        fairgpu::parse_allocation(problem, fairgpu::fuzz::text(data, size), "fuzz");
    std::unique_ptr<fairgpu::SharePolicy> policy;
    if (!given.policy.empty()) policy = fairgpu::make_share_policy(given.policy);
    fairgpu::AuditReport report = fairgpu::audit_allocation(problem, given.x, policy.get());
    (void)fairgpu::audit_to_json(report);
  });
  return 0;
}
