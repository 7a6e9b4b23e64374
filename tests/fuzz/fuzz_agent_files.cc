// What the agent reads from jobs and flags (src/live/process.h,
// src/live/node_resources.h): the first byte picks the job's progress file
// (parse_progress_report: never throws; a count >= 0 and a batch size of 0
// or 1..2^30) or --cpu-list (parse_cpu_list: InputError or ascending
// distinct ids below 1024).
#include <algorithm>

#include "fuzz_contract.h"
#include "live/node_resources.h"
#include "live/process.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string rest(fairgpu::fuzz::text(data + 1, size - 1));
  if (data[0] % 2 == 0) {
    const auto report = fairgpu::live::parse_progress_report(rest);
    if (report && (report->iterations < 0 || report->batch_size < 0 ||
                   report->batch_size > (std::int64_t{1} << 30)))
      fairgpu::fuzz::broken("progress report out of range");
    return 0;
  }
  fairgpu::fuzz::expect_input_error_or_success([&] {
    const auto cpus = fairgpu::live::parse_cpu_list(rest);
    if (!std::is_sorted(cpus.begin(), cpus.end()) ||
        std::adjacent_find(cpus.begin(), cpus.end()) != cpus.end() ||
        (!cpus.empty() && (cpus.front() < 0 || cpus.back() >= 1024)))
      fairgpu::fuzz::broken("cpu list not ascending distinct ids below 1024");
  });
  return 0;
}
