// Writers of allocation reports: the JSON of `fairgpu allocate --json` (which
// `fairgpu audit` reads back) and the aligned text table with the property
// section. Formats are documented in fairgpu/allocation_io.h.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fairgpu/allocation_io.h"

namespace fairgpu {

namespace {

using Json = nlohmann::ordered_json;  // keeps fields in the documented order

// LP solutions carry round-off like 3e-17 or -1e-12; printing those as 0
// keeps the output readable and never adds to a type's usage.
constexpr double kZero = 1e-9;

Matrix cleaned(const Matrix& x) {
  Matrix c = x;
  for (std::size_t r = 0; r < c.rows(); ++r)
    for (std::size_t j = 0; j < c.cols(); ++j)
      if (std::abs(c(r, j)) < kZero) c(r, j) = 0.0;
  return c;
}

// Per-tenant rows: the sum over the tenant's entities, and each entity's own.
struct Row {
  std::string name;
  std::vector<double> allocation;
  double throughput = 0;
  std::vector<Row> job_types;  // empty for a tenant without job types
};

std::vector<Row> tenant_rows(const ShareProblem& p, const Matrix& x) {
  std::vector<Row> rows;
  for (const auto& t : p.tenants) {
    Row row{t.name, std::vector<double>(p.num_types(), 0.0), 0.0, {}};
    for (std::size_t e : t.entities) {
      const auto& entity = p.entities[e];
      Row jt{entity.job_type,
             std::vector<double>(x.row(e), x.row(e) + p.num_types()),
             p.throughput(e, x),
             {}};
      for (std::size_t j = 0; j < p.num_types(); ++j) row.allocation[j] += jt.allocation[j];
      row.throughput += jt.throughput;
      if (!entity.job_type.empty()) row.job_types.push_back(std::move(jt));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

double total_throughput(const std::vector<Row>& rows) {
  double total = 0;
  for (const auto& r : rows) total += r.throughput;
  return total;
}

Json audit_object(const AuditReport& r) {
  Json a;
  a["max_envy_ratio"] = r.max_envy_ratio;
  a["envy_pair"] = r.envy_pair;
  a["envy_free"] = r.envy_free;
  a["min_sharing_incentive_ratio"] = r.min_sharing_incentive_ratio;
  a["sharing_incentive_worst"] = r.sharing_incentive_worst;
  a["sharing_incentive"] = r.sharing_incentive;
  a["pareto_improvement"] = r.pareto_improvement;
  a["pareto_efficient"] = r.pareto_efficient;
  a["total_throughput"] = r.total_throughput;
  a["max_total_throughput"] = r.max_total_throughput;
  a["efficiency_gap"] = r.efficiency_gap;
  a["optimal_efficiency"] = r.optimal_efficiency;
  a["sp_probed"] = r.sp_probed;
  a["sp_max_gain"] = r.sp_max_gain;
  a["sp_best_lie"] = r.sp_best_lie;
  a["strategy_proof"] = r.strategy_proof;
  Json holds;
  holds["envy_free"] = r.envy_free;
  holds["sharing_incentive"] = r.sharing_incentive;
  holds["pareto_efficient"] = r.pareto_efficient;
  holds["optimal_efficiency"] = r.optimal_efficiency;
  if (r.sp_probed) holds["strategy_proof"] = r.strategy_proof;
  a["holds"] = std::move(holds);
  return a;
}

std::string properties_text(const AuditReport& r) {
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  auto or_none = [](const std::string& s) { return s.empty() ? std::string("none") : s; };
  std::string out = "\nproperties\n";
  auto line = [&out](std::string_view property, std::string_view holds, const std::string& what) {
    out += fmt::format("  {:<22} {:<4} {}\n", property, holds, what);
  };
  line("envy-free", yes(r.envy_free),
       fmt::format("max envy ratio {:.4f} ({})", r.max_envy_ratio, or_none(r.envy_pair)));
  line("sharing incentive", yes(r.sharing_incentive),
       fmt::format("min sharing-incentive ratio {:.4f} ({})", r.min_sharing_incentive_ratio,
                   or_none(r.sharing_incentive_worst)));
  line("Pareto-efficient", yes(r.pareto_efficient),
       fmt::format("possible improvement {:.2f}%", 100 * r.pareto_improvement));
  line("optimal efficiency", yes(r.optimal_efficiency),
       fmt::format("total throughput {:.3f} of at most {:.3f} (gap {:.2f}%)", r.total_throughput,
                   r.max_total_throughput, 100 * r.efficiency_gap));
  if (r.sp_probed)
    line("strategy-proof (probe)", yes(r.strategy_proof),
         fmt::format("best lie gains {:.2f}% ({})", 100 * r.sp_max_gain, or_none(r.sp_best_lie)));
  else
    line("strategy-proof (probe)", "-", "not probed");
  return out;
}

}  // namespace

std::string allocation_to_json(const ShareProblem& p, const Matrix& x, const AllocationOutput& o) {
  std::vector<Row> rows = tenant_rows(p, cleaned(x));
  Json out;
  if (!o.policy.empty()) out["policy"] = o.policy;
  out["gpu_types"] = p.gpu_types;
  Json tenants = Json::array();
  for (const auto& r : rows) {
    Json t;
    t["name"] = r.name;
    t["allocation"] = r.allocation;
    t["throughput"] = r.throughput;
    if (!r.job_types.empty()) {
      Json types = Json::array();
      for (const auto& jt : r.job_types)
        types.push_back(
            Json{{"name", jt.name}, {"allocation", jt.allocation}, {"throughput", jt.throughput}});
      t["job_types"] = std::move(types);
    }
    tenants.push_back(std::move(t));
  }
  out["tenants"] = std::move(tenants);
  out["total_throughput"] = total_throughput(rows);
  if (o.solve_seconds >= 0) out["solve_seconds"] = o.solve_seconds;
  if (o.audit) out["audit"] = audit_object(*o.audit);
  return out.dump(2) + "\n";
}

std::string audit_to_json(const AuditReport& r) { return audit_object(r).dump(2) + "\n"; }

std::string allocation_to_text(const ShareProblem& p, const Matrix& x, const AllocationOutput& o) {
  std::vector<Row> rows = tenant_rows(p, cleaned(x));
  std::size_t k = p.num_types();

  std::string capacity;
  for (std::size_t j = 0; j < k; ++j)
    capacity += fmt::format("{}{} {:g}", j ? ", " : "", p.gpu_types[j], p.capacity[j]);
  std::string out = o.policy.empty() ? "allocation" : o.policy + " allocation";
  out += fmt::format(" of {:g} GPUs ({}) to {} tenant{}", p.total_capacity(), capacity, rows.size(),
                     rows.size() == 1 ? "" : "s");
  if (o.solve_seconds >= 0) out += fmt::format(", solved in {:.3f} s", o.solve_seconds);
  out += "\n\n";

  constexpr std::string_view kIndent = "  ";
  std::size_t name_w = std::string_view("capacity").size();
  for (const auto& r : rows) {
    name_w = std::max(name_w, r.name.size());
    for (const auto& jt : r.job_types) name_w = std::max(name_w, kIndent.size() + jt.name.size());
  }
  std::vector<std::size_t> col_w(k);
  for (std::size_t j = 0; j < k; ++j) col_w[j] = std::max<std::size_t>(p.gpu_types[j].size(), 8);
  constexpr std::size_t kThroughputW = 10;  // "throughput"

  auto row_text = [&](const std::string& name, const std::vector<double>& v, const double* tp) {
    std::string s = fmt::format("{:<{}}", name, name_w);
    for (std::size_t j = 0; j < k; ++j) s += fmt::format("  {:>{}.3f}", v[j], col_w[j]);
    if (tp) s += fmt::format("  {:>{}.3f}", *tp, kThroughputW);
    // Trailing spaces would make the output awkward to diff.
    s.erase(s.find_last_not_of(' ') + 1);
    return s + "\n";
  };

  out += fmt::format("{:<{}}", "tenant", name_w);
  for (std::size_t j = 0; j < k; ++j) out += fmt::format("  {:>{}}", p.gpu_types[j], col_w[j]);
  out += fmt::format("  {:>{}}\n", "throughput", kThroughputW);
  std::vector<double> used(k, 0.0);
  for (const auto& r : rows) {
    out += row_text(r.name, r.allocation, &r.throughput);
    for (const auto& jt : r.job_types)
      out += row_text(std::string(kIndent) + jt.name, jt.allocation, &jt.throughput);
    for (std::size_t j = 0; j < k; ++j) used[j] += r.allocation[j];
  }
  double total = total_throughput(rows);
  out += row_text("total", used, &total);
  out += row_text("capacity", p.capacity, nullptr);

  if (o.audit) out += properties_text(*o.audit);
  return out;
}

}  // namespace fairgpu
