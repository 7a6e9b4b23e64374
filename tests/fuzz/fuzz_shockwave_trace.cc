// Shockwave's 12-column .trace (--trace x.trace): read_shockwave_trace, which
// also derives each job's batch-size schedule, then written back as native CSV.
#include "fairgpu/workload.h"
#include "fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = fairgpu::fuzz::write_scratch(data, size);
  fairgpu::TraceOptions options;
  options.tenants = size % 2 == 0 ? 0 : 3;
  fairgpu::fuzz::expect_input_error_or_success(
      [&] { fairgpu::write_native_trace(fairgpu::read_shockwave_trace(path, options)); });
  return 0;
}
