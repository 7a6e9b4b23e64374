// The allocation problem that every share policy solves (docs/design.md §1, OEF §2.3).
//
// k GPU types with m_j devices each, ordered slowest first (type 0 is the
// reference type). Tenants carry a weight and an optional demand (the most
// devices they can use in total). Each tenant owns one or more entities, the
// "virtual tenants" of OEF §4.2.4: one per job type, each with one speedup
// vector W_l (throughput normalised to type 0) and an equal split of its
// tenant's weight. Policies allocate a fractional share matrix X (entity x type).
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace fairgpu {

inline constexpr double kNoDemand = std::numeric_limits<double>::infinity();

// Row-major dense matrix of doubles; rows are entities, columns GPU types.
class Matrix {
 public:
  Matrix() = default;
  Matrix(std::size_t rows, std::size_t cols, double fill = 0.0)
      : rows_(rows), cols_(cols), v_(rows * cols, fill) {}
  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  double& operator()(std::size_t r, std::size_t c) { return v_[r * cols_ + c]; }
  double operator()(std::size_t r, std::size_t c) const { return v_[r * cols_ + c]; }
  const double* row(std::size_t r) const { return v_.data() + r * cols_; }
  double* row(std::size_t r) { return v_.data() + r * cols_; }

 private:
  std::size_t rows_ = 0, cols_ = 0;
  std::vector<double> v_;
};

struct ShareEntity {
  std::string name;             // "alice", or "bob/lstm" for a job type of bob
  std::string job_type;         // empty when the tenant gave a single speedup vector
  std::size_t tenant = 0;       // index into ShareProblem::tenants
  std::vector<double> speedup;  // size k, speedup[0] == 1 after normalisation
  double weight = 1.0;          // tenant weight / number of its entities
};

struct ShareTenant {
  std::string name;
  double weight = 1.0;
  double demand = kNoDemand;          // cap on total devices, split over entities by weight
  std::vector<std::size_t> entities;  // indices into ShareProblem::entities
};

struct ShareProblem {
  std::vector<std::string> gpu_types;
  std::vector<double> capacity;  // m_j
  std::vector<ShareTenant> tenants;
  std::vector<ShareEntity> entities;

  std::size_t num_types() const { return gpu_types.size(); }
  std::size_t num_entities() const { return entities.size(); }
  double total_capacity() const;
  double total_weight() const;  // sum of entity (== tenant) weights
  // An entity's own device cap: its weight share of its tenant's demand (a
  // virtual tenant is a replica with a slice of the tenant's weight, so it gets
  // the same slice of the tenant's demand). Infinite when the tenant has none.
  double entity_demand(std::size_t e) const {
    const auto& t = tenants[entities[e].tenant];
    return t.demand * entities[e].weight / t.weight;
  }
  bool has_demands() const;

  // W_l . x_l, and its sum over all entities (the efficiency of X).
  double throughput(std::size_t e, const Matrix& x) const;
  double total_throughput(const Matrix& x) const;
  // Entity x type matrix of speedups: the objective of max-throughput LPs.
  Matrix speedup_matrix() const;
  // Entity e's weighted equal split of every type: m * w_e / total_weight
  // (pass total_weight(); loops over entities compute it once).
  std::vector<double> equal_share(std::size_t e, double total_weight) const;
  // Entity i's bundle as l sees it: x_i scaled to l's weight (OEF §4.2.3's
  // replication), and its value to l under l's demand: V_l(x_i * w_l / w_i).
  std::vector<double> envied_bundle(std::size_t l, std::size_t i, const Matrix& x) const;
  double envy_value(std::size_t l, std::size_t i, const Matrix& x) const;
  // W_l . y for an arbitrary bundle y (size k).
  double value(std::size_t e, const double* y) const;
  // The most throughput entity e can draw from bundle y using at most `cap`
  // devices: a fractional knapsack that takes e's fastest types first. This is
  // V_l(y) of the demand-aware envy and sharing-incentive definitions.
  double capped_value(std::size_t e, const double* y, double cap) const;
  // The sub-bundle of y that realises capped_value, written to out (size k).
  void capped_bundle(std::size_t e, const double* y, double cap, double* out) const;

  // Adds a tenant with one speedup vector (weight > 0, speedup size k).
  std::size_t add_tenant(std::string name, std::vector<double> speedup, double weight = 1.0,
                         double demand = kNoDemand);
  // Adds a tenant with several job types; its weight is split equally.
  std::size_t add_tenant_job_types(std::string name,
                                   std::vector<std::pair<std::string, std::vector<double>>> types,
                                   double weight = 1.0, double demand = kNoDemand);
};

// A share policy's output: X plus how long the policy took.
struct ShareAllocation {
  Matrix x;  // entity x type, devices (fractional)
  double solve_seconds = 0.0;
};

// Checks X against capacities (tolerance `tol`), non-negativity and demands.
// Returns an empty string when X is feasible, else a description of the first
// violation. Used by tests and by `fairgpu audit` on user-given allocations.
std::string check_feasible(const ShareProblem& p, const Matrix& x, double tol = 1e-6);

}  // namespace fairgpu
