// The GPU share each tenant held while every tenant had a backlog, from a live
// store's rows (the live and Slurm end-to-end tests). On a loaded machine the
// submissions trickle in and overlap the first finishes, so "while every
// tenant waits" is a union of intervals, not one interval from the last
// submission on.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace fairgpu::testing_support {

struct JobSpan {
  std::string tenant;
  double submitted = 0, finished = 0;
};

// The intervals during which every tenant has at least `n` unfinished jobs
// (submitted, not yet finished).
inline std::vector<std::pair<double, double>> contended_intervals(const std::vector<JobSpan>& jobs,
                                                                  int n) {
  std::vector<std::tuple<double, std::string, int>> changes;  // (time, tenant, +1 | -1)
  std::map<std::string, int> unfinished;
  for (const JobSpan& j : jobs) {
    unfinished[j.tenant] = 0;
    changes.emplace_back(j.submitted, j.tenant, +1);
    changes.emplace_back(j.finished, j.tenant, -1);
  }
  std::sort(changes.begin(), changes.end());
  std::vector<std::pair<double, double>> out;
  double opened = 0.0;
  bool open = false;
  for (std::size_t i = 0; i < changes.size();) {
    const double t = std::get<0>(changes[i]);
    for (; i < changes.size() && std::get<0>(changes[i]) == t; ++i)
      unfinished[std::get<1>(changes[i])] += std::get<2>(changes[i]);
    bool all = !unfinished.empty();
    for (const auto& [tenant, count] : unfinished) all = all && count >= n;
    if (all && !open) opened = t;
    if (!all && open) out.emplace_back(opened, t);
    open = all;
  }
  return out;
}

struct LeaseSpan {
  std::string tenant;
  double devices = 0, start = 0, end = 0;
};

// GPU-seconds of each tenant's leases inside the intervals, and the
// intervals' total length.
struct ContendedShare {
  std::map<std::string, double> gpu_seconds;
  double seconds = 0;
};
inline ContendedShare held_while_contended(const std::vector<std::pair<double, double>>& intervals,
                                           const std::vector<LeaseSpan>& leases) {
  ContendedShare out;
  for (const auto& [from, to] : intervals) {
    out.seconds += to - from;
    for (const LeaseSpan& l : leases) {
      const double overlap = std::min(to, l.end) - std::max(from, l.start);
      if (overlap > 0) out.gpu_seconds[l.tenant] += l.devices * overlap;
    }
  }
  return out;
}

}  // namespace fairgpu::testing_support
