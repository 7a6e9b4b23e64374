// PLACEHOLDER: replaced by the real implementation.
#include <stdexcept>
#include "policy/share_policies.h"
namespace fairgpu::policy {
std::unique_ptr<SharePolicy> NewMaxMin() { throw std::logic_error("max_min: not implemented yet"); }
}  // namespace fairgpu::policy
