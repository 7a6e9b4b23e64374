#include "fairgpu/share_problem.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace fairgpu {

double ShareProblem::total_capacity() const {
  return std::accumulate(capacity.begin(), capacity.end(), 0.0);
}

double ShareProblem::total_weight() const {
  double w = 0;
  for (const auto& t : tenants) w += t.weight;
  return w;
}

bool ShareProblem::has_demands() const {
  return std::any_of(tenants.begin(), tenants.end(),
                     [](const ShareTenant& t) { return std::isfinite(t.demand); });
}

double ShareProblem::value(std::size_t e, const double* y) const {
  const auto& w = entities[e].speedup;
  double v = 0;
  for (std::size_t j = 0; j < w.size(); ++j) v += w[j] * y[j];
  return v;
}

double ShareProblem::throughput(std::size_t e, const Matrix& x) const { return value(e, x.row(e)); }

void ShareProblem::capped_bundle(std::size_t e, const double* y, double cap, double* out) const {
  const auto& w = entities[e].speedup;
  std::vector<std::size_t> order(w.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return w[a] > w[b]; });
  double left = cap;  // +inf without a demand: everything is taken
  for (std::size_t j : order) {
    out[j] = std::min(std::max(0.0, y[j]), std::max(0.0, left));
    left -= out[j];
  }
}

double ShareProblem::capped_value(std::size_t e, const double* y, double cap) const {
  if (!std::isfinite(cap)) return value(e, y);
  std::vector<double> z(num_types());
  capped_bundle(e, y, cap, z.data());
  return value(e, z.data());
}

double ShareProblem::total_throughput(const Matrix& x) const {
  double t = 0;
  for (std::size_t e = 0; e < num_entities(); ++e) t += throughput(e, x);
  return t;
}

Matrix ShareProblem::speedup_matrix() const {
  Matrix w(num_entities(), num_types());
  for (std::size_t e = 0; e < num_entities(); ++e)
    for (std::size_t j = 0; j < num_types(); ++j) w(e, j) = entities[e].speedup[j];
  return w;
}

std::vector<double> ShareProblem::equal_share(std::size_t e, double total_weight) const {
  std::vector<double> share(num_types());
  double fraction = entities[e].weight / total_weight;
  for (std::size_t j = 0; j < num_types(); ++j) share[j] = capacity[j] * fraction;
  return share;
}

std::vector<double> ShareProblem::envied_bundle(std::size_t l, std::size_t i,
                                                const Matrix& x) const {
  std::vector<double> y(num_types());
  double scale = entities[l].weight / entities[i].weight;
  for (std::size_t j = 0; j < num_types(); ++j) y[j] = x(i, j) * scale;
  return y;
}

double ShareProblem::envy_value(std::size_t l, std::size_t i, const Matrix& x) const {
  return capped_value(l, envied_bundle(l, i, x).data(), entity_demand(l));
}

std::size_t ShareProblem::add_tenant(std::string name, std::vector<double> speedup, double weight,
                                     double demand) {
  std::size_t t = tenants.size();
  ShareEntity e;
  e.name = name;
  e.tenant = t;
  e.speedup = std::move(speedup);
  e.weight = weight;
  tenants.push_back({std::move(name), weight, demand, {entities.size()}});
  entities.push_back(std::move(e));
  return t;
}

std::size_t ShareProblem::add_tenant_job_types(
    std::string name, std::vector<std::pair<std::string, std::vector<double>>> types, double weight,
    double demand) {
  std::size_t t = tenants.size();
  ShareTenant tenant{name, weight, demand, {}};
  // OEF §4.2.4: one virtual tenant per job type, the weight split equally.
  double share = weight / static_cast<double>(types.size());
  for (auto& [type, speedup] : types) {
    ShareEntity e;
    e.name = name + "/" + type;
    e.job_type = type;
    e.tenant = t;
    e.speedup = std::move(speedup);
    e.weight = share;
    tenant.entities.push_back(entities.size());
    entities.push_back(std::move(e));
  }
  tenants.push_back(std::move(tenant));
  return t;
}

std::string check_feasible(const ShareProblem& p, const Matrix& x, double tol) {
  std::ostringstream out;
  if (x.rows() != p.num_entities() || x.cols() != p.num_types()) {
    out << "allocation is " << x.rows() << "x" << x.cols() << ", expected " << p.num_entities()
        << "x" << p.num_types();
    return out.str();
  }
  for (std::size_t j = 0; j < p.num_types(); ++j) {
    double used = 0;
    for (std::size_t e = 0; e < p.num_entities(); ++e) {
      if (!std::isfinite(x(e, j)) || x(e, j) < -tol) {
        out << p.entities[e].name << " has " << x(e, j) << " of " << p.gpu_types[j];
        return out.str();
      }
      used += x(e, j);
    }
    if (used > p.capacity[j] * (1 + tol) + tol) {
      out << p.gpu_types[j] << " over capacity: " << used << " > " << p.capacity[j];
      return out.str();
    }
  }
  for (std::size_t e = 0; e < p.num_entities(); ++e) {
    double cap = p.entity_demand(e);
    if (!std::isfinite(cap)) continue;
    double held = 0;
    for (std::size_t j = 0; j < p.num_types(); ++j) held += x(e, j);
    if (held > cap * (1 + tol) + tol) {
      out << p.entities[e].name << " holds " << held << " devices, demand " << cap;
      return out.str();
    }
  }
  return {};
}

}  // namespace fairgpu
