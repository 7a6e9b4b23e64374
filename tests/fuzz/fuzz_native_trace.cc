// Native CSV trace (--trace x.csv): read_native_trace, then written back.
#include "fairgpu/workload.h"
#include "fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = fairgpu::fuzz::write_scratch(data, size);
  fairgpu::fuzz::expect_input_error_or_success([&] {
    fairgpu::Workload w = fairgpu::read_native_trace(path);
    (void)fairgpu::write_native_trace(w);
  });
  return 0;
}
