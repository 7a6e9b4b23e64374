// `fairgpu allocate --input x.json --audit`: parse_share_problem, solved by a
// share policy (picked by the input's length, so every policy is reached),
// audited with the strategy-proofness probe, written as JSON and text.
#include <vector>

#include "fairgpu/allocation_io.h"
#include "fairgpu/audit.h"
#include "fairgpu/policy.h"
#include "fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<std::string> names = fairgpu::PolicyRegistry::builtin().names();
  fairgpu::fuzz::expect_input_error_or_success([&] {
    fairgpu::ShareProblem problem =
        fairgpu::parse_share_problem(fairgpu::fuzz::text(data, size), "fuzz");
    const std::string& name = names[size % names.size()];
    auto policy = fairgpu::make_share_policy(name);
    fairgpu::ShareAllocation result = fairgpu::run_share_policy(*policy, problem);
    fairgpu::AuditReport report = fairgpu::audit_allocation(problem, result.x, policy.get());
    fairgpu::AllocationOutput out{name, result.solve_seconds, &report};
    (void)fairgpu::allocation_to_json(problem, result.x, out);
    (void)fairgpu::allocation_to_text(problem, result.x, out);
  });
  return 0;
}
