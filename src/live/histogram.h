// A Prometheus histogram kept as it is observed (issue 32, item 9): fixed
// upper bounds, cumulative counts written at a scrape, their sum and count.
// For durations measured as they happen (a scheduling decision, an exchange
// with Slurm): a last-value gauge would show only the one sample a scrape
// happens to see.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <string>

namespace fairgpu::live {

class DurationHistogram {
 public:
  // Seconds: a decision takes milliseconds on a small cluster, seconds on a
  // large one (docs/performance.md); a Slurm exchange tens of milliseconds.
  static constexpr std::array<double, 12> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                     0.1,   0.25,   0.5,   1,    2.5,   10};
  void observe(double seconds) {
    for (std::size_t i = 0; i < kBounds.size(); ++i)
      if (seconds <= kBounds[i]) ++counts_[i];
    sum_ += seconds;
    ++count_;
  }
  std::uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  // The family's HELP, TYPE and samples, in the text format.
  std::string exposition(const char* name, const char* help) const {
    std::string out = fmt::format("# HELP {0} {1}\n# TYPE {0} histogram\n", name, help);
    for (std::size_t i = 0; i < kBounds.size(); ++i)
      out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kBounds[i], counts_[i]);
    out += fmt::format("{0}_bucket{{le=\"+Inf\"}} {1}\n{0}_sum {2}\n{0}_count {1}\n", name, count_,
                       sum_);
    return out;
  }

 private:
  std::array<std::uint64_t, kBounds.size()> counts_{};
  double sum_ = 0.0;
  std::uint64_t count_ = 0;
};

}  // namespace fairgpu::live
