// CLP/CBC behind fairgpu's model-building API. The model is kept in our own
// arrays until the first solve, then loaded into a ClpSimplex that is kept so
// later rows and columns can be appended and re-solved from the last basis.
#include "fairgpu/lp.h"

#include <coin/CbcModel.hpp>
#include <coin/ClpDualRowSteepest.hpp>
#include <coin/ClpSimplex.hpp>
#include <coin/ClpSolve.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>
#include <stdexcept>

namespace fairgpu {

const char* to_string(LpStatus s) {
  switch (s) {
    case LpStatus::kOptimal:
      return "optimal";
    case LpStatus::kInfeasible:
      return "infeasible";
    case LpStatus::kUnbounded:
      return "unbounded";
    case LpStatus::kError:
      return "error";
    case LpStatus::kFeasible:
      return "feasible (stopped at a limit)";
  }
  return "?";
}

namespace {

ClpSimplex::Status to_clp(BasisStatus s) {
  switch (s) {
    case BasisStatus::kBasic:
      return ClpSimplex::basic;
    case BasisStatus::kAtUpper:
      return ClpSimplex::atUpperBound;
    case BasisStatus::kFree:
      return ClpSimplex::isFree;
    case BasisStatus::kAtLower:
      break;
  }
  return ClpSimplex::atLowerBound;
}

BasisStatus from_clp(ClpSimplex::Status s) {
  switch (s) {
    case ClpSimplex::basic:
      return BasisStatus::kBasic;
    case ClpSimplex::atUpperBound:
      return BasisStatus::kAtUpper;
    case ClpSimplex::isFree:
    case ClpSimplex::superBasic:
      return BasisStatus::kFree;
    default:  // atLowerBound, isFixed
      return BasisStatus::kAtLower;
  }
}

}  // namespace

struct LinearProgram::Impl {
  struct Vec {  // a sparse row or column
    std::vector<int> index;
    std::vector<double> value;
  };
  std::vector<double> col_lower, col_upper, obj;
  std::vector<char> integer;
  std::vector<double> row_lower, row_upper;
  // Every coefficient, as triplets; what the first load (and CBC) uses.
  std::vector<int> t_row, t_col;
  std::vector<double> t_val;
  // Added since the last sync with CLP: entries of new rows, of new columns.
  std::vector<Vec> new_rows, new_cols;

  ClpSimplex clp;
  LpBasis start;  // warm_start()'s basis for the first solve; empty: none
  bool loaded = false;
  bool exact_steepest_edge = false;
  int loaded_rows = 0, loaded_cols = 0;

  // Perturbation always on (50; CLP decides by itself at 100): degenerate
  // max-min LPs with many identical rows (job-level Gavel in the simulator)
  // otherwise trip an internal CLP 1.17 assertion (ClpPackedMatrix.cpp:5222).
  Impl() {
    clp.setLogLevel(0);
    clp.setPerturbation(50);
  }

  CoinPackedMatrix matrix() const {
    return CoinPackedMatrix(true, t_row.data(), t_col.data(), t_val.data(),
                            static_cast<CoinBigIndex>(t_val.size()));
  }

  void add_entry(int r, int c, double v) {
    t_row.push_back(r);
    t_col.push_back(c);
    t_val.push_back(v);
    if (!loaded) return;
    if (r >= loaded_rows) {
      auto& row = new_rows[static_cast<std::size_t>(r - loaded_rows)];
      row.index.push_back(c);
      row.value.push_back(v);
    } else {  // a new column's entry in a row CLP already has
      auto& col = new_cols[static_cast<std::size_t>(c - loaded_cols)];
      col.index.push_back(r);
      col.value.push_back(v);
    }
  }

  void load(bool maximize) {
    CoinPackedMatrix m = matrix();
    // The triplet constructor sizes the matrix by the largest index seen.
    m.setDimensions(static_cast<int>(row_lower.size()), static_cast<int>(obj.size()));
    clp.loadProblem(m, col_lower.data(), col_upper.data(), obj.data(), row_lower.data(),
                    row_upper.data());
    clp.setOptimizationDirection(maximize ? -1.0 : 1.0);
    loaded = true;
    loaded_rows = static_cast<int>(row_lower.size());
    loaded_cols = static_cast<int>(obj.size());
    new_rows.clear();
    new_cols.clear();
  }

  // Installs `start` as CLP's basis; entries beyond its size are slack-basic
  // rows and columns at their lower bound.
  void apply_start() {
    clp.createStatus();  // all slacks basic
    const int cols = clp.numberColumns(), rows = clp.numberRows();
    for (int c = 0; c < cols && c < static_cast<int>(start.variables.size()); ++c)
      clp.setColumnStatus(c, to_clp(start.variables[static_cast<std::size_t>(c)]));
    for (int r = 0; r < rows && r < static_cast<int>(start.constraints.size()); ++r)
      clp.setRowStatus(r, to_clp(start.constraints[static_cast<std::size_t>(r)]));
    start = {};
  }

  // Appends the columns, then the rows, added since the last load/sync.
  void sync() {
    for (std::size_t i = 0; i < new_cols.size(); ++i) {
      std::size_t c = static_cast<std::size_t>(loaded_cols) + i;
      const auto& col = new_cols[i];
      clp.addColumn(static_cast<int>(col.index.size()), col.index.data(), col.value.data(),
                    col_lower[c], col_upper[c], obj[c]);
    }
    loaded_cols += static_cast<int>(new_cols.size());
    new_cols.clear();
    if (!new_rows.empty()) {  // one batched call: CLP reallocates per call
      std::vector<CoinBigIndex> starts{0};
      std::vector<int> index;
      std::vector<double> value;
      for (const auto& row : new_rows) {
        index.insert(index.end(), row.index.begin(), row.index.end());
        value.insert(value.end(), row.value.begin(), row.value.end());
        starts.push_back(static_cast<CoinBigIndex>(index.size()));
      }
      clp.addRows(static_cast<int>(new_rows.size()), row_lower.data() + loaded_rows,
                  row_upper.data() + loaded_rows, starts.data(), index.data(), value.data());
    }
    loaded_rows += static_cast<int>(new_rows.size());
    new_rows.clear();
  }
};

void LinearProgram::warm_start(LpBasis basis) { impl_->start = std::move(basis); }

LpBasis LinearProgram::basis() const {
  const auto& d = *impl_;
  LpBasis b;
  if (!d.loaded) return b;
  auto& clp = const_cast<ClpSimplex&>(d.clp);  // the status getters are not const
  b.variables.resize(static_cast<std::size_t>(clp.numberColumns()));
  b.constraints.resize(static_cast<std::size_t>(clp.numberRows()));
  for (std::size_t c = 0; c < b.variables.size(); ++c)
    b.variables[c] = from_clp(clp.getColumnStatus(static_cast<int>(c)));
  for (std::size_t r = 0; r < b.constraints.size(); ++r)
    b.constraints[r] = from_clp(clp.getRowStatus(static_cast<int>(r)));
  return b;
}

LinearProgram::LinearProgram() : impl_(std::make_unique<Impl>()) {}
LinearProgram::~LinearProgram() = default;
LinearProgram::LinearProgram(LinearProgram&&) noexcept = default;
LinearProgram& LinearProgram::operator=(LinearProgram&&) noexcept = default;

int LinearProgram::add_variable(double lower, double upper, double objective, bool integer) {
  int c = add_column(lower, upper, objective, {}, {});
  impl_->integer.back() = integer ? 1 : 0;
  return c;
}

int LinearProgram::add_column(double lower, double upper, double objective,
                              std::span<const int> rows, std::span<const double> coefs) {
  if (rows.size() != coefs.size()) throw std::invalid_argument("add_column: size mismatch");
  auto& d = *impl_;
  int c = static_cast<int>(d.obj.size());
  d.col_lower.push_back(lower);
  d.col_upper.push_back(upper);
  d.obj.push_back(objective);
  d.integer.push_back(0);
  if (d.loaded) d.new_cols.emplace_back();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= static_cast<int>(d.row_lower.size()))
      throw std::out_of_range("add_column: unknown constraint");
    d.add_entry(rows[i], c, coefs[i]);
  }
  return c;
}

int LinearProgram::add_constraint(std::span<const int> vars, std::span<const double> coefs,
                                  double lower, double upper) {
  if (vars.size() != coefs.size()) throw std::invalid_argument("add_constraint: size mismatch");
  auto& d = *impl_;
  int r = static_cast<int>(d.row_lower.size());
  d.row_lower.push_back(lower);
  d.row_upper.push_back(upper);
  if (d.loaded) d.new_rows.emplace_back();
  for (std::size_t i = 0; i < vars.size(); ++i) {
    if (vars[i] < 0 || vars[i] >= static_cast<int>(d.obj.size()))
      throw std::out_of_range("add_constraint: unknown variable");
    d.add_entry(r, vars[i], coefs[i]);
  }
  return r;
}

void LinearProgram::set_objective(int var, double coef) {
  impl_->obj.at(var) = coef;
  if (impl_->loaded && var < impl_->loaded_cols) impl_->clp.setObjectiveCoefficient(var, coef);
}

void LinearProgram::set_variable_bounds(int var, double lower, double upper) {
  impl_->col_lower.at(var) = lower;
  impl_->col_upper.at(var) = upper;
  if (impl_->loaded && var < impl_->loaded_cols) impl_->clp.setColumnBounds(var, lower, upper);
}

void LinearProgram::set_constraint_bounds(int row, double lower, double upper) {
  impl_->row_lower.at(row) = lower;
  impl_->row_upper.at(row) = upper;
  if (impl_->loaded && row < impl_->loaded_rows) impl_->clp.setRowBounds(row, lower, upper);
}

void LinearProgram::delete_constraints(std::span<const int> rows) {
  auto& d = *impl_;
  const std::size_t m = d.row_lower.size();
  std::vector<int> new_index(m, 0);
  for (int r : rows) {
    if (r < 0 || static_cast<std::size_t>(r) >= m)
      throw std::out_of_range("delete_constraints: unknown constraint");
    new_index[static_cast<std::size_t>(r)] = -1;
  }
  std::vector<int> gone;
  int next = 0;
  for (std::size_t r = 0; r < m; ++r) {
    if (new_index[r] < 0) {
      gone.push_back(static_cast<int>(r));
    } else {
      new_index[r] = next++;
    }
  }
  if (gone.empty()) return;
  if (d.loaded) {
    d.sync();  // CLP must hold every row before some can go
    d.clp.deleteRows(static_cast<int>(gone.size()), gone.data());
    d.loaded_rows = next;
  }
  std::size_t kept = 0;
  for (std::size_t e = 0; e < d.t_val.size(); ++e) {
    int r = new_index[static_cast<std::size_t>(d.t_row[e])];
    if (r < 0) continue;
    d.t_row[kept] = r;
    d.t_col[kept] = d.t_col[e];
    d.t_val[kept] = d.t_val[e];
    ++kept;
  }
  d.t_row.resize(kept);
  d.t_col.resize(kept);
  d.t_val.resize(kept);
  // Duals may cover fewer rows than the model (rows added since the solve).
  auto compact = [&](std::vector<double>& v) {
    std::size_t out = 0;
    for (std::size_t r = 0; r < v.size(); ++r)
      if (new_index[r] >= 0) v[out++] = v[r];
    v.resize(out);
  };
  compact(d.row_lower);
  compact(d.row_upper);
  compact(duals_);
}

int LinearProgram::num_variables() const { return static_cast<int>(impl_->obj.size()); }
int LinearProgram::num_constraints() const { return static_cast<int>(impl_->row_lower.size()); }

namespace {

LpStatus status_of(int clp_status) {
  switch (clp_status) {
    case 0:
      return LpStatus::kOptimal;
    case 1:
      return LpStatus::kInfeasible;
    case 2:
      return LpStatus::kUnbounded;
    default:
      return LpStatus::kError;
  }
}

}  // namespace

LpStatus LinearProgram::solve(const LpSolveOptions& options) {
  auto& d = *impl_;
  bool has_integer = false;
  for (char c : d.integer) has_integer |= c != 0;

  if (has_integer) {
    // MILP: a fresh CBC model each time (branch and bound keeps no useful basis).
    CoinPackedMatrix m = d.matrix();
    m.setDimensions(static_cast<int>(d.row_lower.size()), static_cast<int>(d.obj.size()));
    OsiClpSolverInterface osi;
    osi.messageHandler()->setLogLevel(0);
    osi.loadProblem(m, d.col_lower.data(), d.col_upper.data(), d.obj.data(), d.row_lower.data(),
                    d.row_upper.data());
    osi.setObjSense(maximize_ ? -1.0 : 1.0);
    for (std::size_t c = 0; c < d.integer.size(); ++c)
      if (d.integer[c]) osi.setInteger(static_cast<int>(c));
    CbcModel cbc(osi);
    cbc.setLogLevel(0);
    cbc.messageHandler()->setLogLevel(0);
    if (options.time_limit_seconds > 0) cbc.setMaximumSeconds(options.time_limit_seconds);
    if (options.max_nodes > 0) cbc.setMaximumNodes(options.max_nodes);
    if (options.relative_gap > 0) cbc.setAllowableFractionGap(options.relative_gap);
    if (!options.initial_solution.empty()) {
      const auto& x = options.initial_solution;
      if (x.size() != d.obj.size())
        throw std::logic_error("LinearProgram: initial_solution needs one value per variable");
      // Taken as given (CBC's own check re-solves with the integers fixed and
      // can leave them fixed); CBC keeps its incumbent in minimising sense.
      double value = 0.0;
      for (std::size_t c = 0; c < x.size(); ++c) value += d.obj[c] * x[c];
      cbc.setBestSolution(x.data(), static_cast<int>(x.size()), maximize_ ? -value : value, false);
    }
    cbc.branchAndBound();
    if (cbc.isProvenInfeasible()) return LpStatus::kInfeasible;
    if (!cbc.bestSolution()) return LpStatus::kError;
    const double* sol = cbc.bestSolution();
    values_.assign(sol, sol + d.obj.size());
    objective_ = 0;
    for (std::size_t c = 0; c < d.obj.size(); ++c) objective_ += d.obj[c] * values_[c];
    duals_.assign(d.row_lower.size(), 0.0);
    // Stopped at the gap: CBC calls that optimal; at a node or time limit
    // the incumbent is still a solution.
    return cbc.isProvenOptimal() ? LpStatus::kOptimal : LpStatus::kFeasible;
  }

  if (options.exact_dual_steepest_edge != d.exact_steepest_edge) {
    ClpDualRowSteepest pricing(options.exact_dual_steepest_edge ? 1 : 3);  // 3: CLP's default
    d.clp.setDualRowPivotAlgorithm(pricing);
    d.exact_steepest_edge = options.exact_dual_steepest_edge;
  }
  if (!d.loaded && !d.start.variables.empty()) {
    d.load(maximize_);
    d.apply_start();
    // Dual simplex repairs primal infeasibility of the carried basis; where
    // the new objective left it dual infeasible too, primal finishes.
    d.clp.dual();
    if (d.clp.status() != 0) d.clp.primal();
  } else if (!d.loaded) {
    d.load(maximize_);
    ClpSolve how;
    how.setSolveType(ClpSolve::useDual);
    how.setPresolveType(options.presolve ? ClpSolve::presolveOn : ClpSolve::presolveOff);
    d.clp.initialSolve(how);
  } else {
    d.clp.setOptimizationDirection(maximize_ ? -1.0 : 1.0);
    bool new_columns = !d.new_cols.empty();
    d.sync();
    // New rows keep the basis dual feasible (dual simplex); new columns keep it
    // primal feasible (primal simplex).
    if (new_columns) {
      d.clp.primal(1);
    } else {
      d.clp.dual();
    }
    if (d.clp.status() != 0) d.clp.primal();
  }
  iterations_ = d.clp.numberIterations();
  LpStatus st = status_of(d.clp.status());
  if (st != LpStatus::kOptimal) return st;
  const double* sol = d.clp.primalColumnSolution();
  values_.assign(sol, sol + d.clp.numberColumns());
  const double* dual = d.clp.dualRowSolution();
  duals_.assign(dual, dual + d.clp.numberRows());
  objective_ = d.clp.objectiveValue();
  return st;
}

}  // namespace fairgpu
