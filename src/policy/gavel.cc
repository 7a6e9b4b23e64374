// PLACEHOLDER: replaced by the real implementation.
#include <stdexcept>
#include "policy/share_policies.h"
namespace fairgpu::policy {
std::unique_ptr<SharePolicy> NewGavel() { throw std::logic_error("gavel: not implemented yet"); }
}  // namespace fairgpu::policy
