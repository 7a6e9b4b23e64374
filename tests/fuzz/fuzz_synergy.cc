// Synergy's inputs: the first byte picks profiles.json (--profiles), its
// cluster .ini (--cluster x.ini) or its header-less trace (--trace-format
// synergy); the rest is the input.
#include "fairgpu/synergy.h"
#include "fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t pick = data[0] % 3;
  ++data;
  --size;
  if (pick == 0) {
    fairgpu::fuzz::expect_input_error_or_success(
        [&] { fairgpu::parse_synergy_profiles(fairgpu::fuzz::text(data, size), "fuzz"); });
  } else if (pick == 1) {
    fairgpu::fuzz::expect_input_error_or_success(
        [&] { fairgpu::parse_synergy_cluster_ini(fairgpu::fuzz::text(data, size), "fuzz"); });
  } else {
    const std::string& path = fairgpu::fuzz::write_scratch(data, size);
    fairgpu::TraceOptions options;
    options.tenants = size % 2 == 0 ? 0 : 3;
    fairgpu::fuzz::expect_input_error_or_success(
        [&] { fairgpu::read_synergy_trace(path, options); });
  }
  return 0;
}
