// Policies and their registry (Kubernetes scheduler-framework style: a small
// interface, a registry keyed by name that rejects duplicates, and one function
// that lists the in-tree policies).
//
// A share policy turns a ShareProblem into a fractional share matrix X. The
// round/priority policies of later issues register beside them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fairgpu/share_problem.h"

namespace fairgpu {

class SharePolicy {
 public:
  virtual ~SharePolicy() = default;
  virtual std::string_view name() const = 0;
  // Never fails on a valid problem (validated at the input boundary).
  virtual Matrix allocate(const ShareProblem& problem) const = 0;
  // For a policy solved again and again on slowly changing problems (the
  // round policies): it may keep what it learned from one solve to start the
  // next. Results stay optimal for the same LP; where the optimum is not
  // unique, another optimal allocation may be returned than without it.
  virtual void remember_between_solves() {}
  // With remember_between_solves(): the solves that follow, up to the next
  // call, are one sequence (progressive filling's shrinking problems), and
  // the i-th solve of a sequence resembles the i-th of the last sequence
  // more than the solve just before it.
  virtual void begin_solve_sequence() {}
};

struct PolicyInfo {
  std::string name;
  std::string description;  // one line, for `fairgpu policies` and --help
  std::function<std::unique_ptr<SharePolicy>()> make;
};

class PolicyRegistry {
 public:
  // Throws std::logic_error on a duplicate name.
  void add(PolicyInfo info);
  const PolicyInfo* find(std::string_view name) const;
  const std::vector<PolicyInfo>& all() const { return policies_; }
  std::vector<std::string> names() const;

  // The registry holding every in-tree policy.
  static const PolicyRegistry& builtin();

 private:
  std::vector<PolicyInfo> policies_;
};

// Convenience: builtin().find(name)->make(), or nullptr for an unknown name.
std::unique_ptr<SharePolicy> make_share_policy(std::string_view name);

// Runs a policy and times it.
ShareAllocation run_share_policy(const SharePolicy& policy, const ShareProblem& problem);

}  // namespace fairgpu
