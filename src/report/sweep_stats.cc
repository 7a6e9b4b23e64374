// Mean and Student-t confidence interval over seeds (see sweep_stats.h).
#include "fairgpu/sweep_stats.h"

#include <gsl/gsl_cdf.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace fairgpu {

double student_t_quantile(double p, int df) {
  if (df < 1 || !(p > 0 && p < 1)) throw std::invalid_argument("student_t_quantile: bad argument");
  return gsl_cdf_tdist_Pinv(p, df);
}

MeanCi mean_ci95(const std::vector<double>& values) {
  MeanCi out;
  double sum = 0.0;
  for (double v : values)
    if (std::isfinite(v)) sum += v, ++out.n;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (out.n == 0) return {0, nan, nan};
  out.mean = sum / out.n;
  if (out.n < 2) {
    out.half_width = nan;
    return out;
  }
  double squares = 0.0;
  for (double v : values)
    if (std::isfinite(v)) squares += (v - out.mean) * (v - out.mean);
  const double sd = std::sqrt(squares / (out.n - 1));
  out.half_width = student_t_quantile(0.975, out.n - 1) * sd / std::sqrt(double(out.n));
  return out;
}

}  // namespace fairgpu
