// PLACEHOLDER: replaced by the real implementation.
#include <stdexcept>
#include "policy/share_policies.h"
namespace fairgpu::policy {
std::unique_ptr<SharePolicy> NewOefCooperative() { throw std::logic_error("oef_coop: not implemented yet"); }
}  // namespace fairgpu::policy
