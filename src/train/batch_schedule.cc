// fairgpu-train's batch-size schedule (see batch_schedule.h).
#include "train/batch_schedule.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <sstream>

#include "train/checkpoint.h"

namespace fairgpu::train {

BatchSchedule BatchSchedule::parse(const std::string& text, std::uint32_t samples) {
  BatchSchedule s;
  s.samples_ = samples == 0 ? 1 : samples;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto colon = item.find(':');
    Entry e;
    auto number = [](const char* first, const char* last, auto& out) {
      return std::from_chars(first, last, out).ptr == last && first != last;
    };
    const char* begin = item.data();
    const char* end = item.data() + item.size();
    if (colon == std::string::npos || !number(begin, begin + colon, e.epoch) ||
        !number(begin + colon + 1, end, e.batch) || e.batch == 0)
      throw BadInput(fmt::format(
          "--batch-schedule: '{}' is not EPOCH:BATCH (an epoch >= 0 and a batch size >= 1)", item));
    if (s.entries_.empty() && e.epoch != 0)
      throw BadInput(
          fmt::format("--batch-schedule: the first entry must be at epoch 0, got '{}'", item));
    if (!s.entries_.empty() && e.epoch <= s.entries_.back().epoch)
      throw BadInput(fmt::format("--batch-schedule: epochs must increase, '{}' after epoch {}",
                                 item, s.entries_.back().epoch));
    s.entries_.push_back(e);
  }
  if (s.entries_.empty()) throw BadInput("--batch-schedule: no entries");
  return s;
}

std::uint32_t BatchSchedule::batch_at(std::uint64_t step) const {
  std::uint64_t first_step = 0;  // of the current entry
  for (std::size_t i = 0; i + 1 < entries_.size(); ++i) {
    const std::uint64_t per_epoch = (samples_ + entries_[i].batch - 1) / entries_[i].batch;
    const std::uint64_t epochs = entries_[i + 1].epoch - entries_[i].epoch;
    if (epochs > (std::numeric_limits<std::uint64_t>::max() - first_step) / per_epoch)
      return entries_[i].batch;  // a segment longer than any run
    const std::uint64_t steps = epochs * per_epoch;
    if (step < first_step + steps) return entries_[i].batch;
    first_step += steps;
  }
  return entries_.back().batch;
}

}  // namespace fairgpu::train
