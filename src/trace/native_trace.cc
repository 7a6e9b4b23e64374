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
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include "fairgpu/input_error.h"
#include "fairgpu/workload.h"
#include "text_input.h"

namespace fairgpu {

namespace {

constexpr std::int64_t kMaxWorkers = 1 << 20;

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

namespace {

// One cell of the native format: empty, text, a real or a whole number.
using NativeCell = std::variant<std::monostate, std::string, double, long long>;

NativeCell real_cell(double v) { return std::isnan(v) ? NativeCell{} : NativeCell{v}; }

// The native format's table of a workload, row by row: `header` gets the
// column names once, then `row` each job's cells. Optional columns
// (priority_weight, cpus/memory_gb, mode/batch_size) appear only when a job
// uses them, so a trace read back writes the same file.
template <class Header, class Row>
void native_table(const Workload& workload, Header&& header, Row&& row) {
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
  std::vector<std::string> names = {"job_id",    "tenant",     "job_type",   "num_workers",
                                    "arrival_s", "iterations", "duration_s", "weight"};
  if (priorities) names.push_back("priority_weight");
  if (resources) names.insert(names.end(), {"cpus", "memory_gb"});
  if (adaptive) names.insert(names.end(), {"mode", "batch_size"});
  header(names);
  std::vector<NativeCell> cells;
  for (const JobSpec& j : workload.jobs) {
    auto w = weight.find(j.tenant);
    cells = {j.id,
             j.tenant,
             j.job_type,
             static_cast<long long>(j.workers),
             j.arrival_s,
             real_cell(j.iterations),
             real_cell(j.duration_s),
             w == weight.end() ? 1.0 : w->second};
    if (priorities) cells.emplace_back(j.weight);
    if (resources) cells.insert(cells.end(), {real_cell(j.cpus), real_cell(j.memory_gb)});
    if (adaptive) {
      if (j.regimes.empty())
        cells.insert(cells.end(), {NativeCell{}, NativeCell{}});
      else
        cells.insert(cells.end(), {NativeCell{std::string(to_string(j.mode))},
                                   NativeCell{static_cast<long long>(j.regimes.front().batch_size)}});
    }
    row(cells);
  }
}

}  // namespace

std::string write_native_trace(const Workload& workload) {
  std::string out;
  auto line = [&out](const auto& cells, auto&& text) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out += text(cells[i]);
    }
    out += '\n';
  };
  native_table(
      workload,
      [&](const std::vector<std::string>& names) {
        line(names, [](const std::string& n) { return n; });
      },
      [&](const std::vector<NativeCell>& cells) {
        line(cells, [](const NativeCell& c) {
          if (const auto* text = std::get_if<std::string>(&c)) return text_input::csv_cell(*text);
          if (const auto* real = std::get_if<double>(&c)) return fmt::format("{}", *real);
          if (const auto* whole = std::get_if<long long>(&c)) return fmt::format("{}", *whole);
          return std::string();
        });
      });
  return out;
}

std::string write_native_trace_json(const Workload& workload) {
  nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
  std::vector<std::string> names;
  native_table(
      workload, [&](const std::vector<std::string>& header) { names = header; },
      [&](const std::vector<NativeCell>& cells) {
        nlohmann::ordered_json job = nlohmann::ordered_json::object();
        for (std::size_t i = 0; i < cells.size(); ++i)
          std::visit(
              [&](const auto& v) {
                if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>)
                  job[names[i]] = nullptr;
                else
                  job[names[i]] = v;
              },
              cells[i]);
        jobs.push_back(std::move(job));
      });
  nlohmann::ordered_json out;
  out["columns"] = names;
  out["jobs"] = std::move(jobs);
  return out.dump(2) + "\n";
}

}  // namespace fairgpu
