// fairgpu's native trace CSV (fairgpu/workload.h): reader and writer.
//
//   job_id,tenant,job_type,num_workers,arrival_s,iterations,duration_s,weight[,priority_weight]
//     [,cpus,memory_gb]
//
// Columns are found by their header name, in any order; job_id, tenant,
// job_type, num_workers, arrival_s and one of iterations / duration_s are
// required. Per row exactly one of iterations and duration_s is filled in.
// `weight` is the tenant's weight: an empty cell leaves it to the tenant's
// other rows (default 1), two different values are an error.
// `priority_weight` (an addition to the format, Gavel's name for it)
// is the job's own priority weight, JobSpec::weight; the writer emits it only
// when some job's differs from 1, so Gavel traces round-trip through this
// format. `cpus` and `memory_gb` (optional columns, optional cells) are the
// whole job's CPU cores and memory in GB, all workers together (JobSpec); an
// empty cell or no column leaves them unset (GPU-proportional at run time),
// and a value must be finite and >= 0 (0 is a real demand: none). The writer
// emits both columns only when some job sets either, so traces without them
// (and the generator's output) are written as before. Cells may be
// double-quoted as in RFC 4180.
// `mode` and `batch_size` (optional columns, optional cells; Shockwave's
// dynamic adaptation, fairgpu/adaptation.h): batch_size turns a job type
// naming only the model into "<model> (batch size B)" (a job type that names
// one must agree); a mode (static | accordion | gns) gives the job its
// per-epoch batch-size schedule, which needs iterations (at the initial batch
// size). The writer emits both columns only when some job has a schedule.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <string>
#include <unordered_map>

#include "fairgpu/input_error.h"
#include "fairgpu/workload.h"
#include "text_input.h"

namespace fairgpu {

namespace {

constexpr std::int64_t kMaxWorkers = 1 << 20;

std::string number_cell(double v) { return std::isnan(v) ? std::string() : fmt::format("{}", v); }

}  // namespace

Workload read_native_trace(const std::string& path) {
  text_input::HeaderTable t(
      path, ',',
      {"job_id", "tenant", "job_type", "num_workers", "arrival_s", "iterations", "duration_s",
       "weight", "priority_weight", "cpus", "memory_gb", "mode", "batch_size"},
      {"job_id", "tenant", "job_type", "num_workers", "arrival_s"});
  if (!t.has("iterations") && !t.has("duration_s"))
    t.fail("iterations", "missing column: give iterations or duration_s (the header has: " +
                             text_input::join(t.columns()) + ")");

  std::vector<JobSpec> jobs;
  std::unordered_map<std::string, std::size_t> id_line;
  struct Weight {
    double value;
    std::size_t line;
  };
  std::map<std::string, Weight> given_weight;
  while (t.next()) {
    JobSpec job;
    job.id = t.name("job_id");
    if (auto [it, fresh] = id_line.emplace(job.id, t.table().line()); !fresh)
      t.fail("job_id", "duplicate job_id '" + job.id + "' (first on line " +
                           std::to_string(it->second) + ")");
    job.tenant = t.name("tenant");
    job.job_type = t.name("job_type");
    job.workers = static_cast<int>(t.whole("num_workers", 1, kMaxWorkers));
    job.arrival_s = t.non_negative("arrival_s");
    bool has_iterations = !t.cell("iterations").empty();
    bool has_duration = !t.cell("duration_s").empty();
    if (has_iterations && has_duration)
      t.fail("iterations", "give either iterations or duration_s, not both");
    if (!has_iterations && !has_duration)
      t.fail(t.has("iterations") ? "iterations" : "duration_s",
             "missing value: give iterations or duration_s");
    if (has_iterations)
      job.iterations = t.positive("iterations");
    else
      job.duration_s = t.positive("duration_s");
    if (!t.cell("priority_weight").empty()) job.weight = t.weight("priority_weight");
    if (!t.cell("cpus").empty()) job.cpus = t.non_negative("cpus");
    if (!t.cell("memory_gb").empty()) job.memory_gb = t.non_negative("memory_gb");
    if (!t.cell("batch_size").empty()) {
      const int bs = static_cast<int>(t.whole("batch_size", 1, 1 << 30));
      if (auto named = split_job_type(job.job_type)) {
        if (named->batch_size != bs)
          t.fail("batch_size", fmt::format("{} disagrees with job_type '{}'", bs, job.job_type));
      } else {
        job.job_type = batch_job_type(job.job_type, bs);
      }
    }
    if (!t.cell("mode").empty()) {
      const auto mode = parse_adaptation_mode(t.cell("mode"));
      if (!mode)
        t.fail("mode",
               "expected static, accordion or gns, got '" + std::string(t.cell("mode")) + "'");
      if (!has_iterations)
        t.fail("iterations", "a job with a mode needs iterations (at its initial batch size)");
      if (std::string problem = set_adaptation(job, *mode); !problem.empty())
        t.fail("mode", problem);
    }
    if (!t.cell("weight").empty()) {
      double w = t.weight("weight");
      auto [it, fresh] = given_weight.emplace(job.tenant, Weight{w, t.table().line()});
      if (!fresh && it->second.value != w)
        t.fail("weight", fmt::format("tenant '{}' has weight {} on line {}; all rows of a tenant "
                                     "must give the same weight",
                                     job.tenant, it->second.value, it->second.line));
    }
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) throw InputError(path, "", "no jobs (the file has only a header)");
  std::map<std::string, double> weights;
  for (const auto& [tenant, w] : given_weight) weights[tenant] = w.value;
  return text_input::make_workload(std::move(jobs), weights);
}

std::string write_native_trace(const Workload& workload) {
  std::map<std::string, double> weight;
  for (const TenantSpec& t : workload.tenants) weight.emplace(t.name, t.weight);
  bool priorities = false;
  bool resources = false;
  bool adaptive = false;
  for (const JobSpec& j : workload.jobs) {
    adaptive = adaptive || !j.regimes.empty();
    priorities = priorities || j.weight != 1.0;
    resources = resources || !std::isnan(j.cpus) || !std::isnan(j.memory_gb);
  }

  std::string out = "job_id,tenant,job_type,num_workers,arrival_s,iterations,duration_s,weight";
  if (priorities) out += ",priority_weight";
  if (resources) out += ",cpus,memory_gb";
  out += adaptive ? ",mode,batch_size\n" : "\n";
  for (const JobSpec& j : workload.jobs) {
    auto w = weight.find(j.tenant);
    out += fmt::format("{},{},{},{},{},{},{},{}", text_input::csv_cell(j.id),
                       text_input::csv_cell(j.tenant), text_input::csv_cell(j.job_type), j.workers,
                       j.arrival_s, number_cell(j.iterations), number_cell(j.duration_s),
                       w == weight.end() ? 1.0 : w->second);
    if (priorities) out += fmt::format(",{}", j.weight);
    if (resources) out += fmt::format(",{},{}", number_cell(j.cpus), number_cell(j.memory_gb));
    if (adaptive)
      out += j.regimes.empty()
                 ? std::string(",,")
                 : fmt::format(",{},{}", to_string(j.mode), j.regimes.front().batch_size);
    out += '\n';
  }
  return out;
}

}  // namespace fairgpu
