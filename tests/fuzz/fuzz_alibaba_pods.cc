// Alibaba's 2023 pod list CSV (--trace, alibaba format): read_alibaba_trace.
#include "fairgpu/workload.h"
#include "fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = fairgpu::fuzz::write_scratch(data, size);
  fairgpu::TraceOptions options;
  options.tenants = size % 2 == 0 ? 0 : 4;
  fairgpu::fuzz::expect_input_error_or_success([&] { fairgpu::read_alibaba_trace(path, options); });
  return 0;
}
