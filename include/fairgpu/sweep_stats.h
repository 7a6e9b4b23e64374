// Summaries over seeds for `fairgpu sweep`: the mean of a metric and the
// half-width of its 95% confidence interval by Student's t (the seeds are
// independent runs; the interval is mean ± t_{0.975, n-1} · s / √n with s the
// sample standard deviation). The t quantile comes from GSL.
#pragma once

#include <vector>

namespace fairgpu {

struct MeanCi {
  int n = 0;                // finite values used (NaN ones, e.g. no finished job, are left out)
  double mean = 0.0;        // NaN when n == 0
  double half_width = 0.0;  // NaN when n < 2; 0 when all values are equal
};

MeanCi mean_ci95(const std::vector<double>& values);

// Student's t quantile t_{p, df} (e.g. p = 0.975), df >= 1.
double student_t_quantile(double p, int df);

}  // namespace fairgpu
