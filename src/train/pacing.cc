// fairgpu-train's speed maps and pacing (issue 5, --speed-map / --scaling).
// See pacing.h: the waiting here emulates a slower device, it stands in for
// no work.
#include "train/pacing.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <thread>

#include "train/checkpoint.h"

namespace fairgpu::train {
namespace {

// Longest single sleep, so a stop signal is acted on promptly even at very
// low emulated rates.
constexpr std::chrono::milliseconds kMaxSleep{10};

// Calls add(key, value) for every "key=value" of a comma-separated list.
template <typename Add>
void parse_pairs(const std::string& text, const std::string& option, Add add) {
  if (text.empty()) throw BadInput(fmt::format("{}: empty list", option));
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string entry = text.substr(pos, comma - pos);
    const std::size_t eq = entry.find('=');
    double value = 0;
    bool ok = eq != std::string::npos && eq > 0 && eq + 1 < entry.size();
    if (ok) {
      const char* end = entry.data() + entry.size();
      ok = std::from_chars(entry.data() + eq + 1, end, value).ptr == end && std::isfinite(value) &&
           value > 0;
    }
    if (!ok)
      throw BadInput(
          fmt::format("{}: bad entry '{}' in '{}' (expected name=positive number, "
                      "comma separated)",
                      option, entry, text));
    add(entry.substr(0, eq), value, entry);
    pos = comma + 1;
  }
}

}  // namespace

std::map<std::string, double> parse_speed_map(const std::string& text, const std::string& option) {
  std::map<std::string, double> out;
  parse_pairs(text, option, [&](const std::string& key, double value, const std::string& entry) {
    if (!out.emplace(key, value).second)
      throw BadInput(fmt::format("{}: GPU type '{}' given twice ('{}')", option, key, entry));
  });
  return out;
}

std::map<std::uint32_t, double> parse_scaling_map(const std::string& text,
                                                  const std::string& option) {
  std::map<std::uint32_t, double> out;
  parse_pairs(text, option, [&](const std::string& key, double value, const std::string& entry) {
    std::uint32_t workers = 0;
    if (std::from_chars(key.data(), key.data() + key.size(), workers).ptr !=
            key.data() + key.size() ||
        workers == 0)
      throw BadInput(
          fmt::format("{}: bad worker count in '{}' (expected a positive integer)", option, entry));
    if (!out.emplace(workers, value).second)
      throw BadInput(fmt::format("{}: {} workers given twice", option, workers));
  });
  return out;
}

Pacer::Pacer(double rate) : rate_(rate), start_(std::chrono::steady_clock::now()) {}

void Pacer::wait(std::uint64_t iterations, const volatile std::sig_atomic_t& stop) {
  if (rate_ <= 0) return;
  const auto offset = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(static_cast<double>(iterations) / rate_));
  // Behind by more than kCatchUp: the schedule starts again kCatchUp behind now.
  if (const auto late = std::chrono::steady_clock::now() - (start_ + offset); late > kCatchUp)
    start_ += late - kCatchUp;
  const auto due = start_ + offset;
  for (auto now = std::chrono::steady_clock::now(); now < due && !stop;
       now = std::chrono::steady_clock::now())
    std::this_thread::sleep_until(std::min(due, now + kMaxSleep));
}

}  // namespace fairgpu::train
