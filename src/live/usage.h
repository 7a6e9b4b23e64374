// Accounting (issue 32, item 6): GPU-seconds of the stored runs over a
// window, per tenant or per job and GPU type (docs/operator-guide.md,
// "Accounting"). A run counts its devices times the part of [start, stop)
// inside [since, until); a run still going counts up to `now`.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "live/store.h"

namespace fairgpu::live {

// Seconds of [start, stop) inside [since, until) (0 when they do not
// overlap); stop < 0 (still running) is read as `now`.
double clipped_seconds(double start, double stop, double since, double until, double now);

// A time given as unix seconds ("1764201600", "1764201600.5") or ISO-8601
// ("2026-11-27", "2026-11-27T03:00", "2026-11-27T03:00:00Z",
// "2026-11-27T04:00:00+01:00"; no offset: UTC). Throws InputError naming
// `field` otherwise.
double parse_time(std::string_view text, const std::string& field);

struct UsageRow {
  std::string tenant, job, gpu_type;  // job "" when per tenant
  double gpu_seconds = 0.0;
  int runs = 0;  // runs that overlap the window
};

// Sums the runs' clipped device-seconds by (tenant, GPU type), or by (job,
// GPU type) when per_job; rows with no overlap are left out. Sorted by
// tenant (job), then GPU type.
std::vector<UsageRow> usage(const std::vector<StoredRun>& runs, double since, double until,
                            double now, bool per_job);

}  // namespace fairgpu::live
