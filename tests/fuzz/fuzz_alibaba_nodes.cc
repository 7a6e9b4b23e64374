// Alibaba's 2023 node list CSV (--alibaba-nodes): read_alibaba_cluster.
#include "fairgpu/workload.h"
#include "fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto gpu_map = fairgpu::default_alibaba_gpu_map();
  const std::string& path = fairgpu::fuzz::write_scratch(data, size);
  fairgpu::fuzz::expect_input_error_or_success(
      [&] { fairgpu::read_alibaba_cluster(path, gpu_map); });
  return 0;
}
