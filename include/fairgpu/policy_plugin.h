// Round policies from outside the in-tree registry (issue 31): a plugin owns
// every specifier that starts with its prefix and a colon (`py:FILE:CLASS...`,
// the Python policies of src/python/), and make_round_policy() and
// resolve_round_policy_options() hand such specifiers to it. Registered at
// start-up by whoever links the plugin (the CLI, the Python module); a
// specifier with a known prefix but no plugin registered is an InputError.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "fairgpu/policy_options.h"
#include "fairgpu/scheduler.h"

namespace fairgpu {

struct RoundPolicyPlugin {
  std::string prefix;  // "py": owns "py:..."
  // The policy, and the values it runs with, for a full specifier; both throw
  // InputError for a bad file, class, key or value.
  std::function<std::unique_ptr<RoundPolicy>(std::string_view, const RoundPolicyOptions&)> make;
  std::function<PolicyOptions(std::string_view, const RoundPolicyOptions&)> resolve;
};

// Applies what `options` sets for `o`'s policy (its level and round fields,
// its settings), as for a registered policy; the plugin's own values go after.
void apply_round_policy_options(const RoundPolicyOptions& options, PolicyOptions& o);

// Replaces a plugin of the same prefix (registration is idempotent).
void register_round_policy_plugin(RoundPolicyPlugin plugin);

}  // namespace fairgpu
