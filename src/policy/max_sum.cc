// PLACEHOLDER: replaced by the real implementation.
#include <stdexcept>
#include "policy/share_policies.h"
namespace fairgpu::policy {
std::unique_ptr<SharePolicy> NewMaxSumThroughput() { throw std::logic_error("max_sum: not implemented yet"); }
}  // namespace fairgpu::policy
