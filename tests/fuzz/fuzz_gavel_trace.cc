// Gavel's .trace format (--trace x.trace): read_gavel_trace, with and
// without tenants spread over the jobs.
#include "fairgpu/workload.h"
#include "fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = fairgpu::fuzz::write_scratch(data, size);
  fairgpu::TraceOptions options;
  options.tenants = size % 2 == 0 ? 0 : 3;
  fairgpu::fuzz::expect_input_error_or_success([&] { fairgpu::read_gavel_trace(path, options); });
  return 0;
}
