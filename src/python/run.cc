// fairgpu.simulate(): one policy on one scenario, as `fairgpu simulate`
// runs it, returning its outputs as column dicts (pandas.DataFrame(result
// ["jobs"]) takes them as they are) and, with out=DIR, writing jobs.csv and
// summary.json there byte for byte as the CLI does. The simulation runs
// without the GIL; a Python policy takes it at each of its calls.
#include "python/run.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "fairgpu/input_error.h"
#include "fairgpu/scenario.h"
#include "fairgpu/sim_report.h"
#include "fairgpu/simulator.h"

namespace py = pybind11;

namespace fairgpu::python {
namespace {

// A CSV's columns: header -> list, numbers as floats where every cell of
// the column parses as one (empty cells: NaN), else strings.
py::dict csv_columns(const std::string& text) {
  py::module_ csv = py::module_::import("csv");
  py::module_ io = py::module_::import("io");
  py::list rows = py::list(csv.attr("reader")(io.attr("StringIO")(text)));
  py::dict out;
  if (rows.empty()) return out;
  py::list header = rows[0];
  const std::size_t n = py::len(header);
  py::object builtins = py::module_::import("builtins");
  py::object to_float = builtins.attr("float");
  for (std::size_t c = 0; c < n; ++c) {
    py::list values;
    bool numeric = true;
    for (std::size_t r = 1; r < py::len(rows); ++r) {
      py::list row = rows[r];
      values.append(c < py::len(row) ? row[c] : py::str(""));
    }
    py::list numbers;
    for (py::handle v : values) {
      const auto s = v.cast<std::string>();
      if (s.empty()) {
        numbers.append(std::numeric_limits<double>::quiet_NaN());
        continue;
      }
      try {
        numbers.append(to_float(v));
      } catch (py::error_already_set&) {
        numeric = false;
        break;
      }
    }
    out[header[c]] = numeric ? numbers : values;
  }
  return out;
}

void write(const std::string& dir, const std::string& name, const std::string& text) {
  std::filesystem::create_directories(dir);
  std::ofstream f(dir + "/" + name, std::ios::binary);
  f << text;
  if (!f) throw InputError("out", "", fmt::format("cannot write {}/{}", dir, name));
}

py::dict simulate_py(const std::string& policy, const std::string& cluster,
                     const std::string& profiles, const std::string& trace,
                     const std::string& trace_format, int tenants, std::uint64_t seed,
                     std::optional<int> jobs, std::optional<int> gen_tenants,
                     std::optional<double> arrivals_per_hour, double round, double horizon_hours,
                     const std::string& out) {
  ScenarioOptions so;
  so.cluster_path = cluster;
  so.profiles_path = profiles;
  so.trace_path = trace;
  so.trace_format = trace_format;
  so.tenants = tenants;
  so.seed = seed;
  if (jobs) so.generator.jobs = *jobs;
  if (gen_tenants) so.generator.tenants = *gen_tenants;
  if (arrivals_per_hour) so.generator.arrivals_per_hour = *arrivals_per_hour;
  RoundPolicyOptions po;
  po.round_s = round;
  auto p = make_round_policy(policy, po);  // a bad name before loading, as the CLI
  std::string jobs_text, summary_text;
  {
    py::gil_scoped_release release;
    const Scenario sc = load_scenario(so);
    SimOptions options;
    if (horizon_hours > 0.0)
      options.horizon_s = sc.workload.jobs.front().arrival_s + horizon_hours * 3600;
    options.sparse_tenant_series = true;
    const SimResult r = simulate(sc.model, sc.workload, *p, options);
    jobs_text = jobs_csv(r);
    summary_text = summary_json(r, summarise(r));
  }
  if (!out.empty()) {
    write(out, "jobs.csv", jobs_text);
    write(out, "summary.json", summary_text);
  }
  py::dict result;
  result["policy"] = policy;
  result["jobs"] = csv_columns(jobs_text);
  result["summary"] = py::module_::import("json").attr("loads")(summary_text);
  return result;
}

}  // namespace

void bind_runs(py::module_& m) {
  m.def("simulate", &simulate_py, py::arg("policy") = "oef-coop", py::kw_only(),
        py::arg("cluster") = "", py::arg("profiles") = "", py::arg("trace") = "",
        py::arg("trace_format") = "", py::arg("tenants") = 0, py::arg("seed") = 1,
        py::arg("jobs") = py::none(), py::arg("gen_tenants") = py::none(),
        py::arg("arrivals_per_hour") = py::none(), py::arg("round") = 0.0,
        py::arg("horizon_hours") = 0.0, py::arg("out") = "",
        "Runs one policy (a name, NAME:key=value..., or py:FILE:CLASS...) on a scenario: the "
        "built-in one by default, else the cluster/profiles/trace files `fairgpu simulate` "
        "reads. Returns {'policy', 'jobs': columns of jobs.csv, 'summary': summary.json}; "
        "out=DIR also writes jobs.csv and summary.json there.");
  m.def("policies", [] {
    py::list out;
    for (const auto& p : round_policy_catalogue()) out.append(p.name);
    return out;
  }, "the registered policies' names");
}

}  // namespace fairgpu::python
