// Throughput profiles (fairgpu/profile.h): the rate of a g-worker job on a GPU
// type, interpolated from the measured worker counts (Gavel measures 1, 2, 4
// and 8), and catalogue look-ups.
//
// Choices where the profile is silent:
// - Scaling is interpolated in efficiency, eff(g) = rate(g) / (g * rate(1)),
//   not in rate, so that a 3-worker job of a well-scaling model is not
//   penalised by the straight line between 2 and 4 workers' rates; beyond
//   the largest measured count that count's efficiency is kept.
// - A measured rate of 0 means the job cannot run at that size on that type
//   (Gavel's convention: its k80 figures for ResNet-50 (batch size 128) at
//   2, 4 and 8 workers are 0, the model does not fit). Between a 0 point and
//   its neighbour the rate is 0 too: a size bracketed by a failing one is not
//   assumed to work.
// - Spread over nodes, a job uses the type's unconsolidated figures when they
//   cover more than one worker, interpolated the same way (the 1-worker point
//   is the consolidated one: a single worker never spans nodes); otherwise
//   its consolidated rate times cross_node_factor.
#include "fairgpu/profile.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace fairgpu {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Efficiency of `workers` workers from the measured rates `table`, relative to
// the 1-worker rate r1.
double efficiency(const std::map<int, double>& table, double r1, int workers) {
  auto eff = [r1](int g, double r) { return g == 1 ? 1.0 : r / (g * r1); };
  int lo_g = 1;
  double lo_eff = 1.0;
  for (const auto& [g, r] : table) {
    if (g <= 1) continue;
    double e = eff(g, r);
    if (g == workers) return e;
    if (g < workers) {
      lo_g = g;
      lo_eff = e;
      continue;
    }
    // The first measured count above `workers`: interpolate.
    if (lo_eff == 0.0 || e == 0.0) return 0.0;
    double w = static_cast<double>(workers - lo_g) / static_cast<double>(g - lo_g);
    return lo_eff + w * (e - lo_eff);
  }
  return lo_eff;
}

bool has_multi_worker(const std::map<int, double>& table) {
  return !table.empty() && table.rbegin()->first > 1;
}

}  // namespace

double JobTypeProfile::rate(const std::string& gpu_type, int workers, bool cross_node) const {
  auto it = consolidated.find(gpu_type);
  if (it == consolidated.end() || workers < 1) return kNaN;
  auto one = it->second.find(1);
  if (one == it->second.end() || !(one->second > 0)) return kNaN;
  const double r1 = one->second;
  if (workers == 1) return r1;  // one worker never spans nodes
  const double g = static_cast<double>(workers);
  if (cross_node) {
    auto u = unconsolidated.find(gpu_type);
    if (u != unconsolidated.end() && has_multi_worker(u->second))
      return g * r1 * efficiency(u->second, r1, workers);
    return g * r1 * efficiency(it->second, r1, workers) * cross_node_factor;
  }
  return g * r1 * efficiency(it->second, r1, workers);
}

const JobTypeProfile* ProfileCatalogue::find(std::string_view name) const {
  for (const auto& p : job_types)
    if (p.name == name) return &p;
  return nullptr;
}

std::optional<std::size_t> ProfileCatalogue::index(std::string_view name) const {
  for (std::size_t i = 0; i < job_types.size(); ++i)
    if (job_types[i].name == name) return i;
  return std::nullopt;
}

std::vector<std::string> ProfileCatalogue::gpu_types() const {
  std::vector<std::string> common;
  for (std::size_t i = 0; i < job_types.size(); ++i) {
    std::vector<std::string> mine;  // sorted: std::map keys
    for (const auto& [type, table] : job_types[i].consolidated)
      if (table.count(1) != 0) mine.push_back(type);
    if (i == 0) {
      common = std::move(mine);
      continue;
    }
    std::vector<std::string> both;
    std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(),
                          std::back_inserter(both));
    common = std::move(both);
  }
  return common;
}

}  // namespace fairgpu
