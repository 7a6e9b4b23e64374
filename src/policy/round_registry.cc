// Round policies by name: every share policy of the registry, wrapped so it
// runs rounds (tenant or job level); the time-sharing policies register here
// beside them.
#include <fmt/format.h>

#include <cmath>

#include "fairgpu/input_error.h"
#include "fairgpu/policy.h"
#include "fairgpu/scheduler.h"
#include "policy/round_policies.h"

namespace fairgpu {

std::vector<std::string> round_policy_names() { return PolicyRegistry::builtin().names(); }

std::unique_ptr<RoundPolicy> make_round_policy(std::string_view name,
                                               const RoundPolicyOptions& options) {
  if (!PolicyRegistry::builtin().find(name)) {
    std::string valid;
    for (const auto& n : round_policy_names()) valid += (valid.empty() ? "" : ", ") + n;
    throw InputError("options", "policy",
                     fmt::format("unknown policy '{}' (valid: {})", name, valid));
  }
  if (options.round_s < 0.0 || !std::isfinite(options.round_s))
    throw InputError("options", "round", "must be a finite number of seconds > 0");
  return policy::NewShareRoundPolicy(std::string(name), options);
}

}  // namespace fairgpu
