// Secrets and tags the live manager makes (node tokens, the Slurm instance
// tag): random bytes from the kernel, as lowercase hex.
#pragma once

#include <cstddef>
#include <string>

namespace fairgpu::live {

// `bytes` random bytes from getrandom(2), two hex digits each; throws
// std::runtime_error if the kernel gives none.
std::string random_hex(std::size_t bytes);

}  // namespace fairgpu::live
