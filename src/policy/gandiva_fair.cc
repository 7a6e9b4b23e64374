// PLACEHOLDER: replaced by the real implementation.
#include <stdexcept>
#include "policy/share_policies.h"
namespace fairgpu::policy {
std::unique_ptr<SharePolicy> NewGandivaFair() { throw std::logic_error("gandiva_fair: not implemented yet"); }
}  // namespace fairgpu::policy
