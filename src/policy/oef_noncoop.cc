// PLACEHOLDER: replaced by the real implementation.
#include <stdexcept>
#include "policy/share_policies.h"
namespace fairgpu::policy {
std::unique_ptr<SharePolicy> NewOefNonCooperative() { throw std::logic_error("oef_noncoop: not implemented yet"); }
}  // namespace fairgpu::policy
