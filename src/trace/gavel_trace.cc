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

#include <array>
#include <string>

#include "fairgpu/input_error.h"
#include "fairgpu/workload.h"
#include "text_input.h"

namespace fairgpu {

namespace {

constexpr std::array<const char*, 10> kColumns = {
    "job_type",    "command",      "working_directory", "num_steps_arg", "needs_data_dir",
    "total_steps", "scale_factor", "priority_weight",   "SLO",           "arrival_time"};
constexpr std::int64_t kMaxWorkers = 1 << 20;

}  // namespace

Workload read_gavel_trace(const std::string& path, const TraceOptions& options) {
  if (options.tenants < 0)
    throw InputError("options", "tenants", "must be >= 0, got " + std::to_string(options.tenants));
  text_input::LineTable t(path, '\t', false);
  std::vector<JobSpec> jobs;
  std::size_t with_slo = 0;
  while (t.next()) {
    const auto& c = t.cells();
    if (c.size() != kColumns.size())
      t.fail("", fmt::format("expected {} tab-separated columns ({}), got {}", kColumns.size(),
                             fmt::join(kColumns, ", "), c.size()));
    auto field = [](std::size_t i) { return std::string(kColumns[i]); };
    JobSpec job;
    job.id = "job-" + std::to_string(jobs.size());
    job.job_type = text_input::name_cell(c[0], t, field(0));
    text_input::whole_cell(c[4], t, field(4), 0, 1);
    job.iterations = text_input::finite_cell(c[5], t, field(5));
    if (!(job.iterations > 0)) t.fail(field(5), "must be > 0, got '" + c[5] + "'");
    job.workers = static_cast<int>(text_input::whole_cell(c[6], t, field(6), 1, kMaxWorkers));
    job.weight = text_input::finite_cell(c[7], t, field(7));
    if (!weight_in_range(job.weight))
      t.fail(field(7), weight_range_text() + ", got '" + c[7] + "'");
    if (text_input::finite_cell(c[8], t, field(8)) >= 0) ++with_slo;
    job.arrival_s = text_input::finite_cell(c[9], t, field(9));
    if (job.arrival_s < 0) t.fail(field(9), "must be >= 0, got '" + c[9] + "'");
    job.tenant = options.tenants > 0 ? "t" + std::to_string(jobs.size() % options.tenants) : job.id;
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) throw InputError(path, "", "no jobs (the trace is empty)");
  Workload w = text_input::make_workload(std::move(jobs));
  if (with_slo > 0)
    w.notes.push_back(fmt::format("{}: {} jobs have an SLO; fairgpu ignores SLOs", path, with_slo));
  return w;
}

}  // namespace fairgpu
