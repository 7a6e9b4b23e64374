// The reading loop shared by Gavel's .trace (gavel_trace.cc) and Shockwave's,
// which is Gavel's with two more columns (shockwave_trace.cc).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "fairgpu/workload.h"
#include "text_input.h"

namespace fairgpu::text_input {

// Reads one job per line of tab-separated `columns` (no header). Gavel's
// columns are found by name: job_type, needs_data_dir, total_steps,
// scale_factor, priority_weight, SLO and arrival_time; the rest are left to
// `extra`, called last on each job with its cells. Jobs are "job-<i>" in file
// order, each its own tenant unless options.tenants spreads them round-robin
// over "t0".."t<N-1>"; set SLOs are counted in Workload::notes.
using GavelExtraColumns =
    std::function<void(JobSpec&, const std::vector<std::string>&, const LineTable&)>;
Workload read_gavel_columns(const std::string& path, const TraceOptions& options,
                            std::span<const char* const> columns,
                            const GavelExtraColumns& extra = {});

}  // namespace fairgpu::text_input
