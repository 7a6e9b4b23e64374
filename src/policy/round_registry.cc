// Round policies by name: every share policy of the registry, wrapped so it
// runs rounds (tenant or job level), and the time-sharing policies, which
// decide job by job at job level.
#include <fmt/format.h>

#include <cmath>
#include <functional>

#include "fairgpu/input_error.h"
#include "fairgpu/policy.h"
#include "fairgpu/scheduler.h"
#include "policy/round_policies.h"

namespace fairgpu {
namespace {

struct TimeSharingPolicy {
  const char* name;
  const char* description;
  std::function<std::unique_ptr<RoundPolicy>(const RoundPolicyOptions&)> make;
};

const std::vector<TimeSharingPolicy>& time_sharing_policies() {
  using namespace policy;
  static const std::vector<TimeSharingPolicy> all = {
      {"astraea", "Astraea: long-term GPU-time fairness, two-phase selection, leases",
       NewAstraeaPolicy},
      {"themis", "Themis: finish-time fairness filter, then efficiency among the worst off",
       NewThemisPolicy},
      {"ftf", "Gavel finish-time fairness: min max rho (LP search on rho), Gavel's rounds",
       NewFtfPolicy},
      {"tiresias", "Tiresias-L: discretised 2D least-attained-service", NewTiresiasPolicy},
      {"allox", "AlloX: min-cost matching of jobs to GPU queue positions, alpha fairness",
       NewAlloxPolicy},
      {"fifo", "first in, first out; no backfilling",
       [](const RoundPolicyOptions& o) { return NewFifoPolicy(o, false); }},
      {"fifo-backfill", "first in, first out; later jobs fill GPUs the head cannot use",
       [](const RoundPolicyOptions& o) { return NewFifoPolicy(o, true); }},
      {"yarn-cs", "YARN capacity scheduler: static per-tenant quota, FIFO inside a tenant",
       NewYarnCsPolicy},
      {"hived", "HiveD: quota, plus preemptible borrowing of idle quota", NewHivedPolicy},
      {"drf", "DRF: dominant-resource fairness over GPUs, CPUs and memory across tenants",
       NewDrfPolicy},
  };
  return all;
}

const TimeSharingPolicy* find_time_sharing(std::string_view name) {
  for (const auto& p : time_sharing_policies())
    if (name == p.name) return &p;
  return nullptr;
}

void check_options(const RoundPolicyOptions& o) {
  auto bad = [](const char* field, const std::string& problem) {
    throw InputError("options", field, problem);
  };
  if (o.round_s < 0.0 || !std::isfinite(o.round_s))
    bad("round", "must be a finite number of seconds > 0");
  if (o.lease_s < 0.0 || !std::isfinite(o.lease_s))
    bad("lease", "must be a finite number of seconds > 0");
  if (!(o.themis_filter > 0.0 && o.themis_filter <= 1.0))
    bad("themis-filter", "must be in (0, 1]");
  if (!(o.allox_alpha > 0.0 && o.allox_alpha <= 1.0)) bad("allox-alpha", "must be in (0, 1]");
  double last = 0.0;
  for (double t : o.tiresias_thresholds) {
    if (!(t > last) || !std::isfinite(t))
      bad("tiresias-thresholds", "must be finite GPU-seconds > 0, strictly ascending");
    last = t;
  }
  if (!(o.tiresias_promote > 0.0) || !std::isfinite(o.tiresias_promote))
    bad("tiresias-promote", "must be a finite multiple > 0");
  if (o.astraea_fair_share != "quota" && o.astraea_fair_share != "demand")
    bad("astraea-fair-share", fmt::format("'{}' is not quota or demand", o.astraea_fair_share));
}

}  // namespace

std::vector<std::string> round_policy_names() {
  std::vector<std::string> names = PolicyRegistry::builtin().names();
  for (const auto& p : time_sharing_policies()) names.emplace_back(p.name);
  return names;
}

std::vector<std::pair<std::string, std::string>> time_sharing_policy_descriptions() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : time_sharing_policies()) out.emplace_back(p.name, p.description);
  return out;
}

std::unique_ptr<RoundPolicy> make_round_policy(std::string_view name,
                                               const RoundPolicyOptions& options) {
  check_options(options);
  if (const TimeSharingPolicy* p = find_time_sharing(name)) {
    if (!options.level.empty() && options.level != "job")
      throw InputError("options", "level",
                       fmt::format("{} decides job by job: only --level job applies", name));
    return p->make(options);
  }
  if (!PolicyRegistry::builtin().find(name)) {
    std::string valid;
    for (const auto& n : round_policy_names()) valid += (valid.empty() ? "" : ", ") + n;
    throw InputError("options", "policy",
                     fmt::format("unknown policy '{}' (valid: {})", name, valid));
  }
  return policy::NewShareRoundPolicy(std::string(name), options);
}

}  // namespace fairgpu
