// Reader of Gavel's .trace files (fairgpu/workload.h), the format of the
// artifact's traces/*.trace (Narayanan et al., OSDI 2020; scheduler/job.py):
// one job per line, 10 tab-separated columns, no header:
//   job_type, command, working_directory, num_steps_arg, needs_data_dir,
//   total_steps, scale_factor, priority_weight, SLO, arrival_time
// total_steps -> iterations, scale_factor -> workers, priority_weight ->
// JobSpec::weight, arrival_time -> arrival_s (seconds). The command columns
// describe how to launch the job on a real cluster and are not used; SLO (-1
// for none in every artifact trace) is checked to be a number, and counted in
// Workload::notes when set, since fairgpu has no deadlines.
// Jobs are "job-<i>" (i from 0 in file order, as Gavel numbers them); the
// trace has no tenants, so each job is its own tenant unless options.tenants
// spreads them round-robin in file order over "t0".."t<N-1>".
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string>

#include "fairgpu/input_error.h"
#include "fairgpu/workload.h"
#include "gavel_columns.h"

namespace fairgpu {

namespace {

constexpr std::array<const char*, 10> kColumns = {
    "job_type",    "command",      "working_directory", "num_steps_arg", "needs_data_dir",
    "total_steps", "scale_factor", "priority_weight",   "SLO",           "arrival_time"};
constexpr std::int64_t kMaxWorkers = 1 << 20;

}  // namespace

namespace text_input {

Workload read_gavel_columns(const std::string& path, const TraceOptions& options,
                            std::span<const char* const> columns, const GavelExtraColumns& extra) {
  if (options.tenants < 0)
    throw InputError("options", "tenants", "must be >= 0, got " + std::to_string(options.tenants));
  auto column = [&](std::string_view name) {
    return static_cast<std::size_t>(
        std::find_if(columns.begin(), columns.end(), [&](const char* c) { return c == name; }) -
        columns.begin());
  };
  const std::size_t type_col = column("job_type"), data_col = column("needs_data_dir"),
                    steps_col = column("total_steps"), workers_col = column("scale_factor"),
                    weight_col = column("priority_weight"), slo_col = column("SLO"),
                    arrival_col = column("arrival_time");
  LineTable t(path, '\t', false);
  std::vector<JobSpec> jobs;
  std::size_t with_slo = 0;
  while (t.next()) {
    const auto& c = t.cells();
    if (c.size() != columns.size())
      t.fail("", fmt::format("expected {} tab-separated columns ({}), got {}", columns.size(),
                             fmt::join(columns, ", "), c.size()));
    auto field = [&](std::size_t i) { return std::string(columns[i]); };
    JobSpec job;
    job.id = "job-" + std::to_string(jobs.size());
    job.job_type = name_cell(c[type_col], t, field(type_col));
    whole_cell(c[data_col], t, field(data_col), 0, 1);
    job.iterations = finite_cell(c[steps_col], t, field(steps_col));
    if (!(job.iterations > 0)) t.fail(field(steps_col), "must be > 0, got '" + c[steps_col] + "'");
    job.workers =
        static_cast<int>(whole_cell(c[workers_col], t, field(workers_col), 1, kMaxWorkers));
    job.weight = finite_cell(c[weight_col], t, field(weight_col));
    if (!weight_in_range(job.weight))
      t.fail(field(weight_col), weight_range_text() + ", got '" + c[weight_col] + "'");
    if (finite_cell(c[slo_col], t, field(slo_col)) >= 0) ++with_slo;
    job.arrival_s = finite_cell(c[arrival_col], t, field(arrival_col));
    if (job.arrival_s < 0) t.fail(field(arrival_col), "must be >= 0, got '" + c[arrival_col] + "'");
    if (extra) extra(job, c, t);
    job.tenant = options.tenants > 0 ? "t" + std::to_string(jobs.size() % options.tenants) : job.id;
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) throw InputError(path, "", "no jobs (the trace is empty)");
  Workload w = make_workload(std::move(jobs));
  if (with_slo > 0)
    w.notes.push_back(fmt::format("{}: {} jobs have an SLO; fairgpu ignores SLOs", path, with_slo));
  return w;
}

}  // namespace text_input

Workload read_gavel_trace(const std::string& path, const TraceOptions& options) {
  return text_input::read_gavel_columns(path, options, kColumns);
}

}  // namespace fairgpu
