// Fetching jobs ahead in loops over the active or running jobs: on big runs
// those lie scattered over an array of hundreds of MB, and the cache misses
// of reading them one after the other dominate such a loop. A hint only.
#pragma once

#include <cstddef>
#include <vector>

#include "fairgpu/scheduler.h"

namespace fairgpu {

// Fetches the cache lines of jobs[indices[r + ahead]] that hold `fields`
// (pointers into that job), for a loop at position r.
template <typename... Fields>
inline void prefetch_ahead(const std::vector<Job>& jobs, const std::vector<std::size_t>& indices,
                           std::size_t r, Fields Job::*... fields) {
  constexpr std::size_t kAhead = 8;
  if (r + kAhead >= indices.size()) return;
  const Job& j = jobs[indices[r + kAhead]];
  (__builtin_prefetch(&(j.*fields)), ...);
}

}  // namespace fairgpu
