// fairgpu-train's batch-size schedule (issue 14 item 5, Shockwave live): the
// job changes its mini-batch size at epoch boundaries, as Accordion and GNS
// jobs do (Shockwave §2), so that the live manager sees regime changes as
// the simulator does: reported in the progress file when they happen.
//
// `--batch-schedule 0:32,10:64` trains epochs 0..9 at batch 32 and from
// epoch 10 on at 64. An epoch at batch b is ceil(samples / b) SGD steps (the
// spec's epochs_of), so the batch of a step follows from the schedule alone
// and a run resumed from a checkpoint takes the same steps as one that was
// never interrupted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fairgpu::train {

class BatchSchedule {
 public:
  struct Entry {
    std::uint64_t epoch = 0;
    std::uint32_t batch = 0;
  };
  // Throws BadInput naming --batch-schedule: entries EPOCH:BATCH, the first
  // at epoch 0, epochs increasing, batches >= 1.
  static BatchSchedule parse(const std::string& text, std::uint32_t samples);
  bool empty() const { return entries_.empty(); }
  // The batch size of SGD step `step` (0-based).
  std::uint32_t batch_at(std::uint64_t step) const;

 private:
  std::vector<Entry> entries_;
  std::uint32_t samples_ = 1;
};

}  // namespace fairgpu::train
