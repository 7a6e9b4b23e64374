// Readers of Shockwave's inputs (Zheng et al., NSDI 2023; specs/shockwave.md
// §1.1, §1.2): its 12-column .trace and its throughput JSON.
//
// The trace is Gavel's (gavel_trace.cc) with two more columns: `mode` after
// scale_factor and `duration` (isolated seconds at the initial batch size)
// before arrival_time. The per-epoch batch-size schedule is not in the file:
// it follows from mode, model and initial batch size (adaptation.h), the
// epoch count from total_steps. `duration` is checked but not kept: the run
// time the simulator uses comes from the schedule and the profile (the
// authors' driver also overwrites it), and a job's work is given once.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "fairgpu/input_error.h"
#include "fairgpu/workload.h"
#include "gavel_columns.h"
#include "text_input.h"

namespace fairgpu {

namespace {

constexpr std::array<const char*, 12> kColumns = {
    "job_type",        "command",     "working_directory", "num_steps_arg",
    "needs_data_dir",  "total_steps", "scale_factor",      "mode",
    "priority_weight", "SLO",         "duration",          "arrival_time"};
}  // namespace

std::string set_adaptation(JobSpec& job, AdaptationMode mode) {
  const auto mb = split_job_type(job.job_type);
  if (!mb)
    return fmt::format("'{}' names no batch size (expected '<model> (batch size N)')",
                       job.job_type);
  const auto samples = dataset_samples(mb->model);
  if (!samples)
    return fmt::format("model '{}' has no known dataset size (known: {})", mb->model,
                       adaptive_models());
  if (!(job.iterations > 0)) return "a job with a batch-size schedule needs iterations";
  const int epochs = epochs_of(job.iterations, *samples, mb->batch_size);
  if (epochs < 1 || epochs > 1000000)
    return fmt::format("{} iterations make {} epochs (1 to 1000000)", job.iterations, epochs);
  job.mode = mode;
  job.model = mb->model;
  job.samples_per_epoch = *samples;
  job.regimes =
      to_regimes(adaptation_schedule(mode, mb->model, mb->batch_size, job.workers, epochs));
  return {};
}

Workload read_shockwave_trace(const std::string& path, const TraceOptions& options) {
  auto mode_and_duration = [](JobSpec& job, const std::vector<std::string>& c,
                              const text_input::LineTable& t) {
    auto field = [](std::size_t i) { return std::string(kColumns[i]); };
    const auto mode = parse_adaptation_mode(text_input::trim(c[7]));
    if (!mode) t.fail(field(7), "expected static, accordion or gns, got '" + c[7] + "'");
    if (!(text_input::finite_cell(c[10], t, field(10)) > 0))
      t.fail(field(10), "must be > 0, got '" + c[10] + "'");
    if (std::string problem = set_adaptation(job, *mode); !problem.empty())
      t.fail(field(0), problem);
  };
  return text_input::read_gavel_columns(path, options, kColumns, mode_and_duration);
}

ProfileCatalogue read_shockwave_profiles_file(const std::string& path) {
  nlohmann::ordered_json doc = text_input::parse_json(text_input::read_text_file(path), path);
  std::size_t left_out = 0;
  auto job_name = [](const std::string& key) {
    const auto comma = key.rfind(',');
    return key.substr(0, comma == std::string::npos ? 0 : comma);
  };
  std::set<std::pair<std::string, std::string>> cannot_run;  // (GPU type, job type)
  if (doc.is_object()) {
    for (auto& [type, table] : doc.items()) {
      if (!table.is_object() || type.ends_with("_unconsolidated")) continue;
      // Per job type (the part of the key before the worker count): every
      // figure 0 on this type means it cannot run here.
      std::map<std::string, bool> all_zero;
      for (auto& [key, entry] : table.items()) {
        const std::string name = job_name(key);
        const auto null = entry.is_object() ? entry.find("null") : entry.end();
        const bool zero = null != entry.end() && null->is_number() && null->get<double>() == 0.0;
        auto [it, fresh] = all_zero.emplace(name, zero);
        if (!fresh) it->second = it->second && zero;
      }
      std::vector<std::string> drop;
      for (auto& [key, entry] : table.items())
        if (all_zero[job_name(key)]) {
          drop.push_back(key);
          cannot_run.emplace(type, job_name(key));
        }
      for (const auto& key : drop) table.erase(key);
      left_out += drop.size();
    }
    // Spread-over-nodes figures of a job type that cannot run on the type go too.
    for (auto& [type, table] : doc.items()) {
      if (!table.is_object() || !type.ends_with("_unconsolidated")) continue;
      const std::string base = type.substr(0, type.size() - std::string("_unconsolidated").size());
      std::vector<std::string> drop;
      for (auto& [key, entry] : table.items())
        if (cannot_run.count({base, job_name(key)})) drop.push_back(key);
      for (const auto& key : drop) table.erase(key);
      left_out += drop.size();
    }
  }
  ProfileCatalogue c = parse_gavel_profiles(doc.dump(), path);
  if (left_out > 0)
    c.source = fmt::format("{} ({} all-zero figures left out: cannot run there)", path, left_out);
  return c;
}

}  // namespace fairgpu
