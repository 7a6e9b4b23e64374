// A thin linear / mixed-integer programming layer over COIN-OR CLP and CBC.
//
// Callers build a model (variables with bounds and objective coefficients,
// sparse constraints with lower/upper bounds), solve it, read values and
// duals, and may add constraints and solve again: the re-solve starts from the
// previous basis (CLP dual simplex), which is what lazy constraint generation
// needs. Callers never see a COIN-OR type (SimGrid's lmm::System pattern).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fairgpu {

inline constexpr double kInf = 1e30;  // CLP's notion of infinity for bounds

// kFeasible (MIP only): a limit (time, nodes) stopped branch and bound with
// an incumbent, whose values are returned; kError: no solution at all.
enum class LpStatus { kOptimal, kInfeasible, kUnbounded, kError, kFeasible };
const char* to_string(LpStatus s);

struct LpSolveOptions {
  bool presolve = true;           // first solve only; CLP's presolve shrinks OEF's LPs a lot
  double time_limit_seconds = 0;  // 0: none (MIP only)
  // MIP only. A deterministic budget for simulations, where a wall-time
  // limit would make results depend on the machine: branch-and-bound nodes
  // (0: none), and the relative gap at which CBC stops (0: CBC's default).
  int max_nodes = 0;
  double relative_gap = 0.0;
  // LP only: dual simplex prices rows by exact steepest-edge weights (one
  // backward solve per row at the start of each solve) instead of CLP's
  // default approximation. Pays off on degenerate LPs re-solved after many
  // added rows: oef-coop needs half the iterations.
  bool exact_dual_steepest_edge = false;
};

// A simplex basis: the status of every variable and of every constraint's
// slack. Carried from one LP to a similar one (same meaning of rows and
// columns, other coefficients) so that the second solve starts near its optimum.
enum class BasisStatus : unsigned char { kBasic, kAtLower, kAtUpper, kFree };
struct LpBasis {
  std::vector<BasisStatus> variables, constraints;
};

class LinearProgram {
 public:
  LinearProgram();
  ~LinearProgram();
  LinearProgram(LinearProgram&&) noexcept;
  LinearProgram& operator=(LinearProgram&&) noexcept;

  void maximize() { maximize_ = true; }
  void minimize() { maximize_ = false; }

  // Returns the variable's index. Bounds may be +-kInf.
  int add_variable(double lower, double upper, double objective = 0.0, bool integer = false);
  // A column with coefficients in existing constraints (column generation).
  int add_column(double lower, double upper, double objective, std::span<const int> rows,
                 std::span<const double> coefs);
  // lower <= sum coef_i * x_{vars_i} <= upper. Returns the row index.
  int add_constraint(std::span<const int> vars, std::span<const double> coefs, double lower,
                     double upper);
  int add_constraint(std::initializer_list<int> vars, std::initializer_list<double> coefs,
                     double lower, double upper) {
    return add_constraint(std::span<const int>(vars.begin(), vars.size()),
                          std::span<const double>(coefs.begin(), coefs.size()), lower, upper);
  }
  void set_objective(int var, double coef);
  void set_variable_bounds(int var, double lower, double upper);
  void set_constraint_bounds(int row, double lower, double upper);
  // Removes the given rows (any order; duplicates ignored). The other rows
  // keep their order and are renumbered from 0, and so are the last duals.
  // Meant for rows with zero dual at the last solve (purging lazily added
  // rows): the next solve starts from the previous basis without them.
  void delete_constraints(std::span<const int> rows);

  int num_variables() const;
  int num_constraints() const;

  // Solves (or re-solves after changes). With integer variables the model is
  // handed to CBC; otherwise CLP.
  LpStatus solve(const LpSolveOptions& options = {});

  // LP only: the first solve starts from `basis` (sized num_variables() x
  // num_constraints() at that solve) instead of CLP's presolve and crash.
  // Any basis is accepted: CLP repairs a singular or wrongly sized one.
  void warm_start(LpBasis basis);
  // LP only: the basis of the last optimal solve.
  LpBasis basis() const;
  // LP only: simplex iterations of the last solve.
  int iterations() const { return iterations_; }

  double objective_value() const { return objective_; }
  double value(int var) const { return values_.at(var); }
  const std::vector<double>& values() const { return values_; }
  // Row duals (shadow prices) in the sense of the stated objective; LP only.
  double dual(int row) const { return duals_.at(row); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool maximize_ = false;
  double objective_ = 0.0;
  int iterations_ = 0;
  std::vector<double> values_;
  std::vector<double> duals_;
};

}  // namespace fairgpu
