// Gavel-style cluster shorthand (--cluster-spec): parse_cluster_spec.
#include "fairgpu/cluster.h"
#include "fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fairgpu::fuzz::expect_input_error_or_success(
      [&] { fairgpu::parse_cluster_spec(fairgpu::fuzz::text(data, size), "fuzz"); });
  return 0;
}
