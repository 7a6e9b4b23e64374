// CPU and memory beside GPUs (Synergy, specs/synergy.md §4): what a run's
// jobs held and used over time, and the speedup each got from its CPUs and
// memory. Written by `fairgpu simulate` when the profiles carry sensitivity
// tables.
#pragma once

#include <string>

#include "fairgpu/sim_result.h"

namespace fairgpu {

struct ResourceSummary {
  // Time averages over [start, end] of the CPUs (memory, GB) held by running
  // jobs, and of the part they use (held, capped at their best-case demand).
  double avg_cpus_allocated = 0.0, avg_cpus_used = 0.0;
  double avg_memory_gb_allocated = 0.0, avg_memory_gb_used = 0.0;
  // Over jobs that ran: the mean of their time-averaged sensitivity
  // multiplier (1 = as fast as with GPU-proportional CPUs and memory).
  double avg_job_speedup = kUnset;
};
ResourceSummary summarise_resources(const SimResult& result);

// Per round: start,end,cpus_allocated,cpus_used,memory_gb_allocated,memory_gb_used
// (time averages over the round). A result whose rounds were streamed
// (SimResult::rounds_streamed) has its file written by its RoundDigest
// instead: this throws std::invalid_argument for it.
std::string resources_csv(const SimResult& result);
// resources_csv's header line and one round's line (RoundDigest streams them).
std::string resources_csv_header();
std::string resources_csv_row(const RoundSample& round);
// Per job: job_id,job_type,workers,run_seconds,speedup (the time-averaged
// multiplier of what it held; empty if it never ran).
std::string job_speedups_csv(const SimResult& result);
// Lines for the summary table: allocation, use and speedup.
std::string resources_table(const ResourceSummary& s);

}  // namespace fairgpu
