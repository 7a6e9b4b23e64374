// Synergy's inputs (fairgpu/synergy.h): profiles.json, its header-less trace,
// its cluster .ini files and its workload generator (specs/synergy.md §1, §4).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <set>
#include <string>

#include "fairgpu/input_error.h"
#include "fairgpu/synergy.h"
#include "text_input.h"

namespace fairgpu {
namespace {

using nlohmann::ordered_json;
using text_input::child;
using text_input::element;
using text_input::JsonReader;

// Synergy's simulator runs jobs up to the Philly cluster's 512 GPUs; one
// figure per worker count keeps the rate flat (JobTypeProfile::rate keeps the
// largest count's efficiency beyond it).
constexpr int kMaxWorkers = 1024;

std::vector<double> increasing_grid(const JsonReader& r, const ordered_json& j,
                                    const std::string& path) {
  r.expect_array(j, path, "numbers");
  if (j.empty()) r.fail(path, "must not be empty");
  std::vector<double> grid;
  for (std::size_t i = 0; i < j.size(); ++i) {
    grid.push_back(r.positive(j[i], element(path, i)));
    if (i > 0 && !(grid[i] > grid[i - 1]))
      r.fail(element(path, i), fmt::format("the grid must be strictly increasing ({} after {})",
                                           grid[i], grid[i - 1]));
  }
  return grid;
}

// One model's entry: its table on the file's grids, demand, speedup, rate.
void read_model(const JsonReader& r, const ordered_json& m, const std::string& path,
                const std::vector<double>& cpu_grid, const std::vector<double>& mem_grid,
                const std::string& gpu_type, JobTypeProfile& p) {
  r.expect_object(m, path);
  r.only_keys(m, path,
              {"cpu_per_gpu", "mem_gb_per_gpu", "speedup", "iter_time_s", "iter_time_base_s",
               "batch", "placement_penalty", "tput"});
  SensitivityTable t;
  t.cpu_per_gpu = cpu_grid;
  t.memory_gb_per_gpu = mem_grid;
  t.best_cpu_per_gpu = r.positive(r.required(m, path, "cpu_per_gpu"), child(path, "cpu_per_gpu"));
  t.best_memory_gb_per_gpu =
      r.positive(r.required(m, path, "mem_gb_per_gpu"), child(path, "mem_gb_per_gpu"));
  t.speedup = r.positive(r.required(m, path, "speedup"), child(path, "speedup"));
  const double iter_time =
      r.positive(r.required(m, path, "iter_time_s"), child(path, "iter_time_s"));
  const std::string tput_path = child(path, "tput");
  const auto* tput = JsonReader::optional(m, "tput");
  if (!tput) r.fail(tput_path, "missing: every model needs its sensitivity table");
  r.expect_array(*tput, tput_path, "rows (one per CPU grid point)");
  if (tput->size() != cpu_grid.size())
    r.fail(tput_path,
           fmt::format("{} rows, the CPU grid has {} points", tput->size(), cpu_grid.size()));
  for (std::size_t i = 0; i < tput->size(); ++i) {
    const std::string row_path = element(tput_path, i);
    const ordered_json& row = (*tput)[i];
    r.expect_array(row, row_path, "numbers (one per memory grid point)");
    if (row.size() != mem_grid.size())
      r.fail(row_path,
             fmt::format("{} cells, the memory grid has {} points", row.size(), mem_grid.size()));
    for (std::size_t k = 0; k < row.size(); ++k)
      t.multiplier.push_back(r.positive(row[k], element(row_path, k)));
  }
  if (const auto* penalty = JsonReader::optional(m, "placement_penalty"))
    p.cross_node_factor = 1.0 / r.positive(*penalty, child(path, "placement_penalty"));
  auto& by_workers = p.consolidated[gpu_type];
  for (int g = 1; g <= kMaxWorkers; ++g) by_workers[g] = 1.0 / iter_time;
  p.sensitivity[gpu_type] = std::move(t);
}

}  // namespace

bool is_synergy_profiles(std::string_view json_text) {
  // Cheap and sufficient: Gavel's files are keyed by GPU type names.
  return json_text.find("\"by_cpus_per_gpu\"") != std::string_view::npos;
}

ProfileCatalogue parse_synergy_profiles(std::string_view json_text, const std::string& source) {
  const ordered_json doc = text_input::parse_json(json_text, source);
  JsonReader r(source);
  r.expect_object(doc, "");
  r.only_keys(doc, "",
              {"source", "notes", "cpu_grid_per_gpu", "mem_grid_gb_per_gpu", "task",
               "by_cpus_per_gpu", "by_gpu_type"});
  const auto cpu_grid =
      increasing_grid(r, r.required(doc, "", "cpu_grid_per_gpu"), "cpu_grid_per_gpu");
  const auto mem_grid =
      increasing_grid(r, r.required(doc, "", "mem_grid_gb_per_gpu"), "mem_grid_gb_per_gpu");
  const ordered_json& by_cpus = r.required(doc, "", "by_cpus_per_gpu");
  r.expect_object(by_cpus, "by_cpus_per_gpu");
  // The tables are normalised at 3 CPUs per GPU; the "4"/"5"/"6" entries
  // only rescale speedup and iteration time, which the table look-up at a
  // cluster's own proportional share already does.
  const auto* base = JsonReader::optional(by_cpus, "3");
  if (!base) r.fail("by_cpus_per_gpu.3", "missing (the 3-CPUs-per-GPU profiles)");
  r.expect_object(*base, "by_cpus_per_gpu.3");
  if (base->empty()) r.fail("by_cpus_per_gpu.3", "no models");

  ProfileCatalogue c;
  c.source = source;
  for (const auto& [model, entry] : base->items()) {
    JobTypeProfile p;
    p.name = r.name(ordered_json(model), child("by_cpus_per_gpu.3", model));
    read_model(r, entry, child("by_cpus_per_gpu.3", model), cpu_grid, mem_grid, kSynergyGpuType, p);
    c.job_types.push_back(std::move(p));
  }
  if (const auto* types = JsonReader::optional(doc, "by_gpu_type")) {
    r.expect_object(*types, "by_gpu_type");
    for (const auto& [type, models] : types->items()) {
      const std::string type_path = child("by_gpu_type", type);
      r.name(ordered_json(type), type_path);
      r.expect_object(models, type_path);
      for (const auto& [model, entry] : models.items()) {
        const std::string name = model;  // clang 14: no lambda capture of a structured binding
        auto it = std::find_if(c.job_types.begin(), c.job_types.end(),
                               [&name](const JobTypeProfile& p) { return p.name == name; });
        if (it == c.job_types.end())
          r.fail(child(type_path, model), "not a model of by_cpus_per_gpu.3");
        read_model(r, entry, child(type_path, model), cpu_grid, mem_grid, type, *it);
      }
    }
    // Every model needs a rate on every type some model has (GPU types are
    // what ProfileCatalogue::gpu_types() intersects).
    for (const auto& [type, models] : types->items())
      for (const JobTypeProfile& p : c.job_types)
        if (!p.consolidated.count(type))
          r.fail(child(child("by_gpu_type", type), p.name), "missing: every model needs an entry");
  }
  return c;
}

Workload read_synergy_trace(const std::string& path, const TraceOptions& options) {
  static constexpr std::array<const char*, 5> kColumns = {"job_id", "model", "arrival_s",
                                                          "iterations", "gpus"};
  if (options.tenants < 0)
    throw InputError("options", "tenants", "must be >= 0, got " + std::to_string(options.tenants));
  text_input::LineTable t(path, ',', false);
  std::vector<JobSpec> jobs;
  std::set<std::string> ids;
  while (t.next()) {
    const auto& c = t.cells();
    if (c.size() != kColumns.size())
      t.fail("", fmt::format("expected 5 comma-separated columns (job_id, model, arrival_s, "
                             "iterations, gpus), got {}",
                             c.size()));
    JobSpec job;
    job.id = text_input::name_cell(c[0], t, kColumns[0]);
    if (!ids.insert(job.id).second) t.fail(kColumns[0], "job '" + job.id + "' appears twice");
    job.job_type = text_input::name_cell(c[1], t, kColumns[1]);
    job.arrival_s = text_input::finite_cell(c[2], t, kColumns[2]);
    if (job.arrival_s < 0) t.fail(kColumns[2], "must be >= 0, got '" + c[2] + "'");
    job.iterations = text_input::finite_cell(c[3], t, kColumns[3]);
    if (!(job.iterations > 0)) t.fail(kColumns[3], "must be > 0, got '" + c[3] + "'");
    job.workers = static_cast<int>(text_input::whole_cell(c[4], t, kColumns[4], 1, kMaxWorkers));
    job.tenant =
        options.tenants > 0 ? "t" + std::to_string(jobs.size() % options.tenants) : "job-" + job.id;
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) throw InputError(path, "", "no jobs (the trace is empty)");
  return text_input::make_workload(std::move(jobs));
}

Cluster parse_synergy_cluster_ini(std::string_view text, const std::string& source) {
  static constexpr std::array<const char*, 6> kKeys = {"racks",           "servers_per_rack",
                                                       "gpus_per_server", "cpus_per_server",
                                                       "dram_per_server", "sspeed_per_server"};
  std::array<double, kKeys.size()> value{};
  std::array<bool, kKeys.size()> seen{};
  std::string section;
  bool skipped_scheduler = false;
  std::size_t line_no = 0, pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text_input::trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    const std::string where = fmt::format("{}:{}", source, line_no);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') throw InputError(where, "", "a section header must end with ']'");
      section = std::string(text_input::trim(line.substr(1, line.size() - 2)));
      if (section != "CLUSTER" && section != "SCHEDULER")
        throw InputError(where, section, "unknown section (expected CLUSTER or SCHEDULER)");
      continue;
    }
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) throw InputError(where, "", "expected key = value");
    const std::string key(text_input::trim(line.substr(0, eq)));
    const std::string_view raw = text_input::trim(line.substr(eq + 1));
    if (section.empty()) throw InputError(where, key, "outside a section");
    if (section == "SCHEDULER") {
      skipped_scheduler = true;
      continue;
    }
    auto it = std::find_if(kKeys.begin(), kKeys.end(), [&](const char* k) { return key == k; });
    if (it == kKeys.end())
      throw InputError(where, key,
                       "unknown key (expected racks, servers_per_rack, gpus_per_server, "
                       "cpus_per_server, dram_per_server, sspeed_per_server)");
    const auto k = static_cast<std::size_t>(it - kKeys.begin());
    if (seen[k]) throw InputError(where, key, "given twice");
    const auto v = text_input::to_double(raw);
    if (!v || !std::isfinite(*v) || !(*v > 0))
      throw InputError(where, key, fmt::format("must be a finite number > 0, got '{}'", raw));
    if (k <= 2 && (*v != std::floor(*v) || *v > 1e6))
      throw InputError(where, key, fmt::format("must be a whole number, got '{}'", raw));
    value[k] = *v;
    seen[k] = true;
  }
  for (std::size_t k = 0; k < 5; ++k)  // the storage speed is optional
    if (!seen[k]) throw InputError(source, kKeys[k], "missing from [CLUSTER]");
  const auto racks = static_cast<int>(value[0]), servers = static_cast<int>(value[1]);
  if (double(racks) * servers > 1e5)
    throw InputError(source, "servers_per_rack", "more than 100000 servers in all");
  Cluster c;
  c.gpu_types = {kSynergyGpuType};
  for (int rack = 0; rack < racks; ++rack)
    for (int s = 0; s < servers; ++s)
      c.nodes.push_back(
          {fmt::format("r{}-s{}", rack, s), 0, static_cast<int>(value[2]), value[3], value[4]});
  if (skipped_scheduler)
    c.notes.push_back(source +
                      ": [SCHEDULER] skipped (fairgpu takes the policy and lease from "
                      "--policy)");
  return c;
}

Cluster read_synergy_cluster_ini(const std::string& path) {
  return parse_synergy_cluster_ini(text_input::read_text_file(path), path);
}

SynergyClassSplit parse_synergy_class_split(std::string_view text) {
  auto bad = [&](const std::string& why) {
    throw InputError("options", "gen-split", fmt::format("'{}': {}", text, why));
  };
  std::array<double, 3> v{};
  std::size_t pos = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t end = i < 2 ? text.find(':', pos) : text.size();
    if (end == std::string_view::npos) bad("expected IMAGE:LANGUAGE:SPEECH, e.g. 20:70:10");
    const auto x = text_input::to_double(text_input::trim(text.substr(pos, end - pos)));
    if (!x || !std::isfinite(*x) || *x < 0) bad("each share must be a finite number >= 0");
    v[i] = *x;
    pos = end + 1;
  }
  if (text.find(':', pos > text.size() ? text.size() : pos) != std::string_view::npos ||
      !(v[0] + v[1] + v[2] > 0))
    bad("expected three shares, not all 0");
  return {v[0], v[1], v[2]};
}

Workload generate_synergy_workload(const GeneratorOptions& options, const SynergyClassSplit& split,
                                   const ProfileCatalogue& catalogue) {
  auto bad = [](const std::string& field, const std::string& why) {
    throw InputError("options", field, why);
  };
  if (options.jobs < 1) bad("jobs", fmt::format("must be >= 1, got {}", options.jobs));
  if (!(options.arrivals_per_hour > 0) || !std::isfinite(options.arrivals_per_hour))
    bad("arrivals_per_hour", "must be a finite number > 0");
  // Synergy's model zoo by task (specs/synergy.md §4).
  static const std::array<std::vector<std::string>, 3> kClasses = {
      std::vector<std::string>{"alexnet", "res18", "res50", "mobilenet", "shufflenet"},
      std::vector<std::string>{"gnmt", "transformer", "lstm"},
      std::vector<std::string>{"m5", "deepspeech"}};
  for (const auto& models : kClasses)
    for (const auto& m : models)
      if (!catalogue.find(m))
        bad("gen-style", fmt::format("synergy needs Synergy's model '{}' in the profiles ({}); "
                                     "give --profiles ../shared/data/synergy/profiles.json",
                                     m, catalogue.source));
  std::mt19937_64 rng(options.seed);
  auto uniform = [&rng] { return text_input::unit_uniform(rng()); };
  const std::array<double, 3> share = {split.image, split.language, split.speech};
  const double total = share[0] + share[1] + share[2];
  const double mean_gap_s = 3600.0 / options.arrivals_per_hour;
  std::vector<JobSpec> jobs;
  jobs.reserve(static_cast<std::size_t>(options.jobs));
  double now = 0.0;
  for (int k = 0; k < options.jobs; ++k) {
    JobSpec job;
    job.id = std::to_string(k);
    if (k > 0) now += -mean_gap_s * std::log1p(-uniform());
    job.arrival_s = now;
    double x = uniform() * total;
    std::size_t cls = 0;
    while (cls < 2 && (x >= share[cls] || share[cls] == 0)) x -= share[cls++];
    const auto& models = kClasses[cls];
    job.job_type = models[std::min(models.size() - 1,
                                   static_cast<std::size_t>(uniform() * double(models.size())))];
    const bool short_job = uniform() < 0.8;
    const double u = uniform();
    job.duration_s =
        short_job ? 60.0 * std::pow(10.0, 1.5 + 1.5 * u) : 60.0 * std::pow(10.0, 3.0 + u);
    job.workers = 1;
    job.tenant = options.tenants > 1 ? "t" + std::to_string(k % options.tenants) : "job-" + job.id;
    jobs.push_back(std::move(job));
  }
  return text_input::make_workload(std::move(jobs));
}

}  // namespace fairgpu
