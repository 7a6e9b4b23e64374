// The LP layer on problems whose optimum is known in closed form.
#include "fairgpu/lp.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace fairgpu {
namespace {

// max 3a + 2b  s.t.  a + b <= 4,  a + 3b <= 6,  a <= 3   ->  a = 3, b = 1, obj = 11.
// The LP of SmallMaximisation, with `scale` on the first row's coefficients.
LinearProgram small_lp(double scale) {
  LinearProgram lp;
  lp.maximize();
  int a = lp.add_variable(0, 3, 3);
  int b = lp.add_variable(0, kInf, 2);
  lp.add_constraint({a, b}, {scale, scale}, -kInf, 4);
  lp.add_constraint({a, b}, {1, 3}, -kInf, 6);
  return lp;
}

// A basis carried to another LP of the same shape: from the optimal basis of
// the same LP the solve takes no iteration; on a changed LP it still reaches
// that LP's optimum; a basis of the wrong size is repaired, not refused.
TEST(LinearProgram, WarmStartFromAnotherLpsBasis) {
  LinearProgram first = small_lp(1.0);
  ASSERT_EQ(first.solve(), LpStatus::kOptimal);
  EXPECT_GT(first.iterations(), 0);
  const LpBasis optimal = first.basis();
  ASSERT_EQ(optimal.variables.size(), 2u);
  ASSERT_EQ(optimal.constraints.size(), 2u);

  LinearProgram same = small_lp(1.0);
  same.warm_start(optimal);
  ASSERT_EQ(same.solve(), LpStatus::kOptimal);
  EXPECT_EQ(same.iterations(), 0);
  EXPECT_NEAR(same.objective_value(), 11, 1e-9);

  // 2a + 2b <= 4 binds harder: a = 2, b = 0, obj = 6.
  LinearProgram changed = small_lp(2.0);
  changed.warm_start(optimal);
  ASSERT_EQ(changed.solve(), LpStatus::kOptimal);
  EXPECT_NEAR(changed.objective_value(), 6, 1e-9);

  LinearProgram wrong_size = small_lp(1.0);
  wrong_size.warm_start({{BasisStatus::kBasic}, {}});
  ASSERT_EQ(wrong_size.solve(), LpStatus::kOptimal);
  EXPECT_NEAR(wrong_size.objective_value(), 11, 1e-9);
}

TEST(LinearProgram, SmallMaximisation) {
  LinearProgram lp;
  lp.maximize();
  int a = lp.add_variable(0, 3, 3);
  int b = lp.add_variable(0, kInf, 2);
  lp.add_constraint({a, b}, {1, 1}, -kInf, 4);
  lp.add_constraint({a, b}, {1, 3}, -kInf, 6);
  ASSERT_EQ(lp.solve(), LpStatus::kOptimal);
  EXPECT_NEAR(lp.objective_value(), 11, 1e-9);
  EXPECT_NEAR(lp.value(a), 3, 1e-9);
  EXPECT_NEAR(lp.value(b), 1, 1e-9);
}

// Adding a row after a solve re-solves from the previous basis:
// with b <= 0.5 the optimum becomes a = 3, b = 0.5, obj = 10.
TEST(LinearProgram, AddRowAndResolve) {
  LinearProgram lp;
  lp.maximize();
  int a = lp.add_variable(0, 3, 3);
  int b = lp.add_variable(0, kInf, 2);
  lp.add_constraint({a, b}, {1, 1}, -kInf, 4);
  ASSERT_EQ(lp.solve(), LpStatus::kOptimal);
  EXPECT_NEAR(lp.objective_value(), 11, 1e-9);
  lp.add_constraint({b}, {1}, -kInf, 0.5);
  ASSERT_EQ(lp.solve(), LpStatus::kOptimal);
  EXPECT_NEAR(lp.objective_value(), 10, 1e-9);
  // A new column priced in: c with objective 5, c + a <= 3.5.
  int c = lp.add_variable(0, kInf, 5);
  lp.add_constraint({a, c}, {1, 1}, -kInf, 3.5);
  ASSERT_EQ(lp.solve(), LpStatus::kOptimal);
  // Best: c = 3.5, a = 0, b = 0.5 -> 17.5 + 1 = 18.5.
  EXPECT_NEAR(lp.objective_value(), 18.5, 1e-9);
}

TEST(LinearProgram, Infeasible) {
  LinearProgram lp;
  int a = lp.add_variable(0, 1, 1);
  lp.add_constraint({a}, {1}, 2, kInf);
  EXPECT_EQ(lp.solve(), LpStatus::kInfeasible);
}

// Knapsack: values 10, 13, 7; weights 4, 6, 3; capacity 9 -> take items 2 and 3 (20).
TEST(LinearProgram, MixedIntegerKnapsack) {
  LinearProgram lp;
  lp.maximize();
  int a = lp.add_variable(0, 1, 10, true);
  int b = lp.add_variable(0, 1, 13, true);
  int c = lp.add_variable(0, 1, 7, true);
  lp.add_constraint({a, b, c}, {4, 6, 3}, -kInf, 9);
  ASSERT_EQ(lp.solve(), LpStatus::kOptimal);
  EXPECT_NEAR(lp.objective_value(), 20, 1e-9);
  EXPECT_NEAR(lp.value(b), 1, 1e-9);
  EXPECT_NEAR(lp.value(c), 1, 1e-9);
}

}  // namespace
}  // namespace fairgpu

namespace fairgpu {
namespace {

// Duals are the rate of change of the stated objective per unit of a row's
// bound: max 3a + 2b, a + b <= 4 (binding, dual 2 once a is at its bound 3).
TEST(LinearProgram, DualsInTheObjectivesSense) {
  LinearProgram lp;
  lp.maximize();
  int a = lp.add_variable(0, 3, 3);
  int b = lp.add_variable(0, kInf, 2);
  int r = lp.add_constraint({a, b}, {1, 1}, -kInf, 4);
  ASSERT_EQ(lp.solve(), LpStatus::kOptimal);
  EXPECT_NEAR(lp.dual(r), 2, 1e-9);
}

}  // namespace
}  // namespace fairgpu

namespace fairgpu {
namespace {

// Deleting rows renumbers the rest in order and keeps their duals; the next
// solve starts from the previous basis. max 3a + 2b, a + b <= 4 (binding),
// a + 3b <= 100 (slack), a <= 3  ->  11; then the binding row goes too.
TEST(LinearProgram, DeleteConstraintsAndResolve) {
  LinearProgram lp;
  lp.maximize();
  int a = lp.add_variable(0, 3, 3);
  int b = lp.add_variable(0, kInf, 2);
  int slack = lp.add_constraint({a, b}, {1, 3}, -kInf, 100);
  int binding = lp.add_constraint({a, b}, {1, 1}, -kInf, 4);
  int cap = lp.add_constraint({b}, {1}, -kInf, 10);
  ASSERT_EQ(lp.solve(), LpStatus::kOptimal);
  EXPECT_NEAR(lp.objective_value(), 11, 1e-9);
  EXPECT_EQ(lp.dual(slack), 0);
  lp.delete_constraints(std::vector<int>{slack, slack});  // duplicates ignored
  EXPECT_EQ(lp.num_constraints(), 2);
  binding -= 1, cap -= 1;  // renumbered in order
  EXPECT_NEAR(lp.dual(binding), 2, 1e-9);
  ASSERT_EQ(lp.solve(), LpStatus::kOptimal);
  EXPECT_NEAR(lp.objective_value(), 11, 1e-9);
  // A row added after a solve, then deleted with another before the next.
  int extra = lp.add_constraint({a}, {1}, -kInf, 2);
  lp.delete_constraints(std::vector<int>{binding, extra});
  ASSERT_EQ(lp.num_constraints(), 1);
  ASSERT_EQ(lp.solve(), LpStatus::kOptimal);
  EXPECT_NEAR(lp.objective_value(), 3 * 3 + 2 * 10, 1e-9);  // only b <= 10 left
  EXPECT_NEAR(lp.dual(0), 2, 1e-9);
  EXPECT_THROW(lp.delete_constraints(std::vector<int>{1}), std::out_of_range);
}

TEST(LinearProgram, DeleteConstraintsBeforeFirstSolve) {
  LinearProgram lp;
  lp.maximize();
  int a = lp.add_variable(0, kInf, 1);
  lp.add_constraint({a}, {1}, -kInf, 1);
  lp.add_constraint({a}, {1}, -kInf, 5);
  lp.delete_constraints(std::vector<int>{0});
  ASSERT_EQ(lp.solve(), LpStatus::kOptimal);
  EXPECT_NEAR(lp.objective_value(), 5, 1e-9);
}

// Exact dual steepest edge changes the path, not the optimum.
TEST(LinearProgram, ExactDualSteepestEdge) {
  LinearProgram lp;
  lp.maximize();
  int a = lp.add_variable(0, 3, 3);
  int b = lp.add_variable(0, kInf, 2);
  lp.add_constraint({a, b}, {1, 1}, -kInf, 4);
  LpSolveOptions o;
  o.exact_dual_steepest_edge = true;
  ASSERT_EQ(lp.solve(o), LpStatus::kOptimal);
  EXPECT_NEAR(lp.objective_value(), 11, 1e-9);
  lp.add_constraint({b}, {1}, -kInf, 0.5);
  ASSERT_EQ(lp.solve(o), LpStatus::kOptimal);
  EXPECT_NEAR(lp.objective_value(), 10, 1e-9);
}

}  // namespace
}  // namespace fairgpu
