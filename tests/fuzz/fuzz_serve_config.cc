// `fairgpu serve --config`: parse_serve_config.
#include "fuzz_contract.h"
#include "live/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fairgpu::fuzz::expect_input_error_or_success(
      [&] { fairgpu::live::parse_serve_config(fairgpu::fuzz::text(data, size), "fuzz"); });
  return 0;
}
