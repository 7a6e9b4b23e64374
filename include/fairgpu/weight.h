// The accepted range of weights: tenants' weights and jobs' priority weights,
// checked wherever they are read (problem JSON, traces, serve config, the
// live API), so a weight outside it is an input error naming its field
// (exit 2, or a 400), never a policy's "LP error" (exit 1).
//
// Why a bound rather than only rescaling: weights are relative, so a common
// factor would not matter, but the share policies' LPs (OEF's weighted envy
// rows and equal shares, Gavel's weighted max-min) carry weight ratios in
// their coefficients, and CLP works to absolute tolerances around 1e-7 to
// 1e-9. With a ratio of 1e20 the small tenant's share lies below what CLP can
// resolve and the solve fails; with 1e-300 and 1e300 the ratio is not even a
// finite double. No rescaling recovers that, and no real deployment needs
// it: [1e-4, 1e4] allows every ratio up to 1e8, and the LPs of oef-coop,
// oef-noncoop and gavel solve at both ends and at that ratio
// (tests/cli_test.cc, tests/sim_cli_test.cc, tests/live_manager_test.cc).
#pragma once

#include <string>

namespace fairgpu {

inline constexpr double kMinWeight = 1e-4;
inline constexpr double kMaxWeight = 1e4;

inline bool weight_in_range(double w) { return w >= kMinWeight && w <= kMaxWeight; }

// The problem in error messages: "must be in [0.0001, 10000]".
inline std::string weight_range_text() { return "must be in [0.0001, 10000]"; }

}  // namespace fairgpu
