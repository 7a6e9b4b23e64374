// Slurm's command output as fairgpu reads it (src/live/slurm/parse.h): the
// same bytes through every parser — squeue, scontrol show job/node, sbatch
// --parsable, a batch's echoed output, host lists and GRES lists.
#include "fuzz_contract.h"
#include "live/slurm/parse.h"

namespace slurm = fairgpu::live::slurm;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using fairgpu::fuzz::expect_input_error_or_success;
  const std::string_view text = fairgpu::fuzz::text(data, size);
  expect_input_error_or_success([&] { slurm::parse_squeue(text); });
  expect_input_error_or_success([&] { slurm::parse_job_details(text); });
  expect_input_error_or_success([&] {
    for (const auto& node : slurm::parse_nodes(text)) {
      (void)node.usable();
      (void)node.gpu_type();
    }
  });
  expect_input_error_or_success([&] { slurm::parse_sbatch_output(text); });
  expect_input_error_or_success([&] {
    slurm::split_batch_output(
        text, {"requeuehold 5", "update JobId=7 NodeList=n1 StartTime=now", "release 7"});
  });
  const std::string_view line = text.substr(0, text.find('\n'));
  expect_input_error_or_success([&] {
    if (slurm::expand_host_list(line, "fuzz", "hosts").size() > slurm::kMaxHostListNames)
      fairgpu::fuzz::broken("host list past its limit");
  });
  expect_input_error_or_success([&] { slurm::parse_gres_list(line, "fuzz", "gres"); });
  return 0;
}
