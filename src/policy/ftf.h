// Gavel's finish-time-fairness allocation (Narayanan et al., OSDI 2020, §4.2)
// as a standalone solver, so tests can check it against independent
// computations; the `ftf` round policy (ftf.cc) feeds it from the scheduler
// state. See ftf.cc for the definitions and the choices made.
#pragma once

#include <cstddef>
#include <vector>

#include "fairgpu/share_problem.h"

namespace fairgpu::policy {

struct FtfJob {
  int workers = 1;
  std::vector<double> rate;       // iterations/s of its gang per type (0: cannot run there)
  double ref_rate = 1.0;          // normalises throughput for the efficiency tie-break
  double remaining = 0.0;         // iterations left
  double elapsed = 0.0;           // t_i: seconds since arrival
  double isolated_elapsed = 0.0;  // t_i^isolated: seconds its progress would have taken isolated
};

struct FtfInput {
  std::vector<double> capacity;  // GPUs per type
  std::vector<FtfJob> jobs;
};

struct FtfSolution {
  Matrix fraction;  // job x type: fraction of time on that type (sum over types <= 1)
  double rho = 0.0;  // z*: the optimal max_i rho_i, to a relative 1e-6 (from above)
  std::vector<double> isolated_throughput;  // iterations/s on the 1/n equal share
  int lp_solves = 0;
  // Every live job all of its time on its one fastest type, which all fit at
  // once (fastest_fit.h): each rho_i at its least, so z* is the largest and
  // this the only allocation of the most throughput among the optima; taken
  // without an LP (rho exact).
  bool fastest = false;
};

// Isolated throughput of every job: 1/n of every type's devices, as time
// fractions of its gang, scaled down to a total of 1 over the types it runs on.
std::vector<double> ftf_isolated_throughput(const FtfInput& in);

// Minimises max_i rho_i(X) over the jobs with work left (others get nothing):
// a search on z (Newton steps from below, bisection as the safeguard) with an
// LP feasibility check per step, then the allocation
// with the most total normalised throughput among those with every rho_i <= z*.
// Throws std::runtime_error if the LP layer fails (a bug, not bad input).
FtfSolution solve_ftf(const FtfInput& in);

}  // namespace fairgpu::policy
