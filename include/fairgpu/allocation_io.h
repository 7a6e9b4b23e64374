// Input and output of share allocations: the JSON problem format read by
// `fairgpu allocate` and `fairgpu audit`, the allocation files `fairgpu audit`
// checks, and the JSON and text reports both commands print.
//
// Readers validate everything a policy relies on (ShareProblem's invariants)
// and report the first problem as an InputError; they never return a
// half-valid problem. Writers return whole strings, so a caller can print
// nothing at all when a later step fails.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "fairgpu/audit.h"
#include "fairgpu/input_error.h"
#include "fairgpu/share_problem.h"

namespace fairgpu {

// ---- problem input ---------------------------------------------------------
//
//   { "gpu_types": ["k80", "p100", "v100"],            slowest first
//     "capacity":  {"k80": 4, "p100": 4, "v100": 4},  devices per type
//     "tenants": [
//       {"name": "alice", "weight": 1, "speedup": [1, 2.2, 3.1]},
//       {"name": "bob", "weight": 2, "demand": 6,
//        "job_types": [{"name": "lstm", "speedup": [1, 1.5, 1.8]},
//                      {"name": "vgg",  "throughput": [10, 30, 40]}]} ] }
//
// A tenant (or job type) gives exactly one of `speedup`, `throughput` (raw
// iterations/s) or, tenants only, `job_types`; vectors are divided by their
// first element, which must be > 0. `weight` defaults to 1, `demand` to none.
// Unknown or repeated keys are errors, so a typo is never silently dropped.
// `source` names the input in error messages.
ShareProblem parse_share_problem(std::string_view json_text, const std::string& source);
ShareProblem read_share_problem(const std::string& path);

// The problem `fairgpu allocate` uses without --input (examples/allocate.json).
std::string_view default_problem_json();
ShareProblem default_share_problem();

// ---- allocation input (`fairgpu audit --allocation`) -----------------------
//
// Either the JSON printed by `fairgpu allocate --json` (tenants matched by
// name; a tenant with job types is read from its job_types[].allocation) or
// {"allocation": [[...], ...]}, one row per entity in ShareProblem::entities
// order. The result has passed check_feasible(p, x).
struct AllocationInput {
  Matrix x;
  std::string policy;  // the file's "policy", empty if none (validated name)
};
AllocationInput parse_allocation(const ShareProblem& p, std::string_view json_text,
                                 const std::string& source);
AllocationInput read_allocation(const ShareProblem& p, const std::string& path);

// ---- output ----------------------------------------------------------------

struct AllocationOutput {
  std::string policy;                  // omitted when empty (an allocation read from a file)
  double solve_seconds = -1;           // omitted when < 0
  const AuditReport* audit = nullptr;  // omitted when null
};

// {"policy", "gpu_types", "tenants": [{"name", "allocation", "throughput",
//   "job_types": [{"name", "allocation", "throughput"}]}], "total_throughput",
//   "solve_seconds", "audit"}, indented, ending in a newline. Tenants are in
// input order; "job_types" is present only for tenants given with job types.
// Allocations are devices per GPU type in gpu_types order; throughput is
// normalised throughput W.x. Entries below 1e-9 are written as 0.
std::string allocation_to_json(const ShareProblem& p, const Matrix& x, const AllocationOutput& o);
// The audit object alone: every AuditReport field by name plus "holds":
// {"envy_free", "sharing_incentive", "pareto_efficient", "optimal_efficiency",
// "strategy_proof" (only when probed)}. Non-finite numbers are written as null.
std::string audit_to_json(const AuditReport& r);

// An aligned table (one row per tenant, indented rows per job type, a total
// and a capacity row) and, with o.audit, the properties that hold.
std::string allocation_to_text(const ShareProblem& p, const Matrix& x, const AllocationOutput& o);

}  // namespace fairgpu
