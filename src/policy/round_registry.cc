// Round policies by name: every share policy of the registry, wrapped so it
// runs rounds (tenant or job level), and the time-sharing policies, which
// decide job by job at job level. Each declares its keys in its own file;
// here a specifier `NAME:key=value...` is resolved against them.
#include <fmt/format.h>

#include <cmath>

#include "fairgpu/input_error.h"
#include "fairgpu/policy.h"
#include "fairgpu/policy_plugin.h"
#include "fairgpu/scheduler.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"

namespace fairgpu {
namespace {

struct TimeSharingPolicy {
  const char* name;
  const char* description;
  std::vector<OptionSpec> (*keys)();
  std::unique_ptr<RoundPolicy> (*make)(const PolicyOptions&);
};

std::vector<OptionSpec> common_keys() { return policy::time_sharing_keys(); }

// Adding a time-sharing policy: its file (keys and factory, declared in
// round_policies.h) and one line here.
const std::vector<TimeSharingPolicy>& time_sharing_policies() {
  using namespace policy;
  static const std::vector<TimeSharingPolicy> all = {
      {"astraea", "Astraea: long-term GPU-time fairness, two-phase selection, leases", AstraeaKeys,
       NewAstraeaPolicy},
      {"themis", "Themis: finish-time fairness filter, then efficiency among the worst off",
       ThemisKeys, NewThemisPolicy},
      {"ftf", "Gavel finish-time fairness: min max rho (LP search on rho), Gavel's rounds", FtfKeys,
       NewFtfPolicy},
      {"tiresias", "Tiresias-L: discretised 2D least-attained-service", TiresiasKeys,
       NewTiresiasPolicy},
      {"allox", "AlloX: min-cost matching of jobs to GPU queue positions, alpha fairness",
       AlloxKeys, NewAlloxPolicy},
      {"fifo", "first in, first out; no backfilling", common_keys,
       [](const PolicyOptions& o) { return NewFifoPolicy(o, false); }},
      {"fifo-backfill", "first in, first out; later jobs fill GPUs the head cannot use",
       common_keys, [](const PolicyOptions& o) { return NewFifoPolicy(o, true); }},
      {"yarn-cs", "YARN capacity scheduler: static per-tenant quota, FIFO inside a tenant",
       common_keys, NewYarnCsPolicy},
      {"hived", "HiveD: quota, plus preemptible borrowing of idle quota", common_keys,
       NewHivedPolicy},
      {"drf", "DRF: dominant-resource fairness over GPUs, CPUs and memory across tenants",
       common_keys, NewDrfPolicy},
      {"synergy-proportional", "Synergy's baseline: CPUs and memory in proportion to GPUs",
       SynergyProportionalKeys, NewSynergyProportionalPolicy},
      {"synergy-greedy", "Synergy-GREEDY: best-case CPU/memory demand or wait",
       SynergyGreedyKeys, NewSynergyGreedyPolicy},
      {"synergy-tune", "Synergy-TUNE: CPU/memory-sensitivity-aware, never below proportional",
       SynergyTuneKeys, NewSynergyTunePolicy},
      {"synergy-opt", "Synergy-OPT: two-stage MILP upper bound on CPU/memory allocation",
       SynergyOptKeys, NewSynergyOptPolicy},
      {"shockwave", "Shockwave: volatile Fisher market planned over T rounds, regime prediction",
       ShockwaveKeys, NewShockwavePolicy},
      {"ossp", "OSSP: Gavel's minimum-makespan LP at job level (Shockwave's baseline)", OsspKeys,
       NewOsspPolicy},
  };
  return all;
}

const TimeSharingPolicy* find_time_sharing(std::string_view name) {
  for (const auto& p : time_sharing_policies())
    if (name == p.name) return &p;
  return nullptr;
}

// The keys of a registered policy; throws InputError for an unknown name.
std::vector<OptionSpec> keys_of(const std::string& name) {
  if (const TimeSharingPolicy* p = find_time_sharing(name)) return p->keys();
  if (PolicyRegistry::builtin().find(name)) return policy::ShareRoundPolicyKeys(name);
  std::string valid;
  for (const auto& n : round_policy_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw InputError("options", "policy", fmt::format("unknown policy '{}' (valid: {})", name, valid));
}

}  // namespace

// Applies the options' fields and settings that concern `o`'s policy.
void apply_round_policy_options(const RoundPolicyOptions& options, PolicyOptions& o) {
  if (!options.level.empty() && o.declares("level")) o.set("level", options.level);
  if (options.round_s > 0.0 && o.declares("round"))
    o.set("round", fmt::format("{}", options.round_s));
  for (const auto& s : options.settings)
    if (s.policy.empty() ? o.declares(s.key) : s.policy == o.policy()) o.set(s.key, s.value);
}

namespace {

// Plugins (policy_plugin.h), by prefix. Registered at start-up, before any
// policy is made; read-only afterwards.
std::vector<RoundPolicyPlugin>& plugins() {
  static std::vector<RoundPolicyPlugin> all;
  return all;
}

// The plugin owning `specifier`, or nullptr; throws InputError for a known
// prefix ("py") whose plugin this build lacks.
const RoundPolicyPlugin* plugin_for(std::string_view specifier) {
  const std::size_t colon = specifier.find(':');
  if (colon == std::string_view::npos) return nullptr;
  const std::string_view prefix = specifier.substr(0, colon);
  for (const auto& p : plugins())
    if (p.prefix == prefix) return &p;
  if (prefix == "py")
    throw InputError("options", "policy",
                     fmt::format("'{}': Python policies need a fairgpu built with Python "
                                 "(pybind11-dev and python3-dev installed, -DFAIRGPU_PYTHON=ON)",
                                 specifier));
  return nullptr;
}

}  // namespace

void register_round_policy_plugin(RoundPolicyPlugin plugin) {
  for (auto& p : plugins())
    if (p.prefix == plugin.prefix) {
      p = std::move(plugin);
      return;
    }
  plugins().push_back(std::move(plugin));
}

std::vector<std::string> round_policy_names() {
  std::vector<std::string> names = PolicyRegistry::builtin().names();
  for (const auto& p : time_sharing_policies()) names.emplace_back(p.name);
  return names;
}

std::vector<RoundPolicyInfo> round_policy_catalogue() {
  std::vector<RoundPolicyInfo> out;
  for (const auto& p : PolicyRegistry::builtin().all())
    out.push_back({p.name, p.description, true, policy::ShareRoundPolicyKeys(p.name)});
  for (const auto& p : time_sharing_policies())
    out.push_back({p.name, p.description, false, p.keys()});
  return out;
}

std::unique_ptr<RoundPolicy> make_round_policy(std::string_view specifier,
                                               const RoundPolicyOptions& options) {
  if (options.round_s < 0.0 || !std::isfinite(options.round_s))
    throw InputError("options", "round", "must be a finite number of seconds > 0");
  if (const RoundPolicyPlugin* plugin = plugin_for(specifier))
    return plugin->make(specifier, options);
  const PolicyOptions o = resolve_round_policy_options(specifier, options);
  if (const TimeSharingPolicy* p = find_time_sharing(o.policy())) return p->make(o);
  return policy::NewShareRoundPolicy(o.policy(), o);
}

PolicyOptions resolve_round_policy_options(std::string_view specifier,
                                           const RoundPolicyOptions& options) {
  if (const RoundPolicyPlugin* plugin = plugin_for(specifier))
    return plugin->resolve(specifier, options);
  const PolicySpecifier spec = parse_policy_specifier(specifier);
  PolicyOptions o(spec.name, keys_of(spec.name), spec.full);
  apply_round_policy_options(options, o);
  for (const auto& [key, value] : spec.values) o.set(key, value);
  // A setting for one policy is checked whichever policy runs (`--themis-filter 2`
  // is an error with any --policy).
  for (const auto& s : options.settings) {
    if (s.policy.empty() || s.policy == spec.name) continue;
    PolicyOptions other(s.policy, keys_of(s.policy));
    other.set(s.key, s.value);
  }
  return o;
}

}  // namespace fairgpu
