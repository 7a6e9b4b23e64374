// Shockwave's throughput JSON (--profiles with a Shockwave trace):
// read_shockwave_profiles_file, which leaves out all-zero entries first.
#include "fairgpu/profile.h"
#include "fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = fairgpu::fuzz::write_scratch(data, size);
  fairgpu::fuzz::expect_input_error_or_success(
      [&] { fairgpu::read_shockwave_profiles_file(path); });
  return 0;
}
