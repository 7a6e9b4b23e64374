// CLP/CBC behind fairgpu's model-building API. The model is kept in our own
// arrays until the first solve, then loaded into a ClpSimplex that is kept so
// later rows/columns can be appended and re-solved from the last basis.
#include "fairgpu/lp.h"

#include <coin/CbcModel.hpp>
#include <coin/ClpSimplex.hpp>
#include <coin/ClpSolve.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <stdexcept>

namespace fairgpu {

const char* to_string(LpStatus s) {
  switch (s) {
    case LpStatus::kOptimal: return "optimal";
    case LpStatus::kInfeasible: return "infeasible";
    case LpStatus::kUnbounded: return "unbounded";
    case LpStatus::kError: return "error";
  }
  return "?";
}

struct LinearProgram::Impl {
  // Columns.
  std::vector<double> col_lower, col_upper, obj;
  std::vector<char> integer;
  // Rows, stored row-wise.
  std::vector<double> row_lower, row_upper;
  std::vector<CoinBigIndex> row_start{0};
  std::vector<int> row_index;
  std::vector<double> row_value;

  ClpSimplex clp;
  bool loaded = false;
  int loaded_rows = 0, loaded_cols = 0;

  Impl() { clp.setLogLevel(0); }

  void load(bool maximize) {
    int ncols = static_cast<int>(obj.size());
    int nrows = static_cast<int>(row_lower.size());
    std::vector<int> lengths(nrows);
    for (int r = 0; r < nrows; ++r) lengths[r] = static_cast<int>(row_start[r + 1] - row_start[r]);
    CoinPackedMatrix rows(false, ncols, nrows, row_start.back(), row_value.data(),
                          row_index.data(), row_start.data(), lengths.data());
    clp.loadProblem(rows, col_lower.data(), col_upper.data(), obj.data(), row_lower.data(),
                    row_upper.data());
    clp.setOptimizationDirection(maximize ? -1.0 : 1.0);
    loaded = true;
    loaded_rows = nrows;
    loaded_cols = ncols;
  }

  // Appends columns and rows added since the last load/solve.
  void sync() {
    int ncols = static_cast<int>(obj.size());
    for (int c = loaded_cols; c < ncols; ++c) {
      clp.addColumn(0, nullptr, nullptr, col_lower[c], col_upper[c], obj[c]);
    }
    loaded_cols = ncols;
    int nrows = static_cast<int>(row_lower.size());
    if (nrows > loaded_rows) {
      std::vector<CoinBigIndex> starts(row_start.begin() + loaded_rows, row_start.end());
      CoinBigIndex base = starts.front();
      for (auto& s : starts) s -= base;
      clp.addRows(nrows - loaded_rows, row_lower.data() + loaded_rows,
                  row_upper.data() + loaded_rows, starts.data(), row_index.data() + base,
                  row_value.data() + base);
      loaded_rows = nrows;
    }
  }
};

LinearProgram::LinearProgram() : impl_(std::make_unique<Impl>()) {}
LinearProgram::~LinearProgram() = default;
LinearProgram::LinearProgram(LinearProgram&&) noexcept = default;
LinearProgram& LinearProgram::operator=(LinearProgram&&) noexcept = default;

int LinearProgram::add_variable(double lower, double upper, double objective, bool integer) {
  auto& d = *impl_;
  d.col_lower.push_back(lower);
  d.col_upper.push_back(upper);
  d.obj.push_back(objective);
  d.integer.push_back(integer ? 1 : 0);
  return static_cast<int>(d.obj.size()) - 1;
}

int LinearProgram::add_constraint(std::span<const int> vars, std::span<const double> coefs,
                                  double lower, double upper) {
  if (vars.size() != coefs.size()) throw std::invalid_argument("add_constraint: size mismatch");
  auto& d = *impl_;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    if (vars[i] < 0 || vars[i] >= static_cast<int>(d.obj.size()))
      throw std::out_of_range("add_constraint: unknown variable");
    d.row_index.push_back(vars[i]);
    d.row_value.push_back(coefs[i]);
  }
  d.row_start.push_back(static_cast<CoinBigIndex>(d.row_index.size()));
  d.row_lower.push_back(lower);
  d.row_upper.push_back(upper);
  return static_cast<int>(d.row_lower.size()) - 1;
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

int LinearProgram::num_variables() const { return static_cast<int>(impl_->obj.size()); }
int LinearProgram::num_constraints() const { return static_cast<int>(impl_->row_lower.size()); }

namespace {

LpStatus status_of(int clp_status) {
  switch (clp_status) {
    case 0: return LpStatus::kOptimal;
    case 1: return LpStatus::kInfeasible;
    case 2: return LpStatus::kUnbounded;
    default: return LpStatus::kError;
  }
}

}  // namespace

LpStatus LinearProgram::solve(const LpSolveOptions& options) {
  auto& d = *impl_;
  bool has_integer = false;
  for (char c : d.integer) has_integer |= c != 0;

  if (has_integer) {
    // MILP: a fresh CBC model each time (branch and bound keeps no useful basis).
    std::vector<int> lengths(d.row_lower.size());
    for (std::size_t r = 0; r < lengths.size(); ++r)
      lengths[r] = static_cast<int>(d.row_start[r + 1] - d.row_start[r]);
    CoinPackedMatrix rows(false, static_cast<int>(d.obj.size()),
                          static_cast<int>(d.row_lower.size()), d.row_start.back(),
                          d.row_value.data(), d.row_index.data(), d.row_start.data(),
                          lengths.data());
    OsiClpSolverInterface osi;
    osi.messageHandler()->setLogLevel(0);
    osi.loadProblem(rows, d.col_lower.data(), d.col_upper.data(), d.obj.data(),
                    d.row_lower.data(), d.row_upper.data());
    osi.setObjSense(maximize_ ? -1.0 : 1.0);
    for (std::size_t c = 0; c < d.integer.size(); ++c)
      if (d.integer[c]) osi.setInteger(static_cast<int>(c));
    CbcModel cbc(osi);
    cbc.setLogLevel(0);
    cbc.messageHandler()->setLogLevel(0);
    if (options.time_limit_seconds > 0) cbc.setMaximumSeconds(options.time_limit_seconds);
    cbc.branchAndBound();
    if (cbc.isProvenInfeasible()) return LpStatus::kInfeasible;
    if (!cbc.bestSolution()) return LpStatus::kError;
    const double* sol = cbc.bestSolution();
    values_.assign(sol, sol + d.obj.size());
    objective_ = 0;
    for (std::size_t c = 0; c < d.obj.size(); ++c) objective_ += d.obj[c] * values_[c];
    duals_.assign(d.row_lower.size(), 0.0);
    return cbc.isProvenOptimal() ? LpStatus::kOptimal : LpStatus::kError;
  }

  if (!d.loaded) {
    d.load(maximize_);
    ClpSolve how;
    how.setSolveType(ClpSolve::useDual);
    how.setPresolveType(options.presolve ? ClpSolve::presolveOn : ClpSolve::presolveOff);
    d.clp.initialSolve(how);
  } else {
    d.clp.setOptimizationDirection(maximize_ ? -1.0 : 1.0);
    d.sync();
    d.clp.dual();  // warm start from the previous basis
    if (d.clp.status() != 0) d.clp.primal();
  }
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
