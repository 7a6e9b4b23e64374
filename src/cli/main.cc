// The `fairgpu` command: `allocate` (run a share policy on a problem),
// `audit` (check a given allocation for the fairness properties) and
// `policies` (list the registered policies).
//
// Errors are caught here, once: bad input or bad flags print one line
// "fairgpu: ..." on stderr and exit 2; anything else (a bug, a policy that is
// not available) exits 1. Output is composed in full before it is written, so
// a failure never leaves partial output on stdout.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include "cli/commands.h"
#include "fairgpu/allocation_io.h"
#include "fairgpu/input_error.h"
#include "fairgpu/scheduler.h"
#include "fairgpu/audit.h"
#include "fairgpu/policy.h"
#include "fairgpu/policy_options.h"
#ifdef FAIRGPU_HAVE_PYTHON
#include "python/embed.h"
#endif
#include "cli/in_process.h"
#include "fairgpu/provenance.h"
#include "fairgpu/transient_error.h"

namespace fairgpu {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitTransient = 3;

// A bad command line (as opposed to a bad input file).
class UsageError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Set while the Python module runs a command in process (run_in_process):
// the output goes here instead of stdout, and a bad command line is thrown
// (UsageError) instead of printed.
thread_local std::string* t_captured = nullptr;

std::string policy_names() {
  std::string out;
  for (const auto& name : PolicyRegistry::builtin().names())
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

void check_policy_name(const std::string& name) {
  if (!PolicyRegistry::builtin().find(name))
    throw UsageError("unknown policy '" + name + "' (valid: " + policy_names() + ")");
}

std::unique_ptr<SharePolicy> make_policy(const std::string& name) {
  check_policy_name(name);
  return make_share_policy(name);
}

struct AllocateArgs {
  std::string input;
  std::string policy = "oef-coop";
  bool json = false;
  bool audit = false;
  bool no_sp_probe = false;
  bool use_default = true;  // no --input given
};

struct AuditArgs {
  std::string input;
  std::string allocation;
  std::string policy;
  bool json = false;
  bool no_sp_probe = false;
};

std::string run_allocate(const AllocateArgs& a) {
  auto policy = make_policy(a.policy);
  ShareProblem problem = a.use_default ? default_share_problem() : read_share_problem(a.input);
  ShareAllocation result = run_share_policy(*policy, problem);
  AllocationOutput out{a.policy, result.solve_seconds, nullptr};
  AuditReport report;
  if (a.audit) {
    AuditOptions options;
    options.strategy_proofness_probe = !a.no_sp_probe;
    report = audit_allocation(problem, result.x, a.no_sp_probe ? nullptr : policy.get(), options);
    out.audit = &report;
  }
  return a.json ? allocation_to_json(problem, result.x, out)
                : allocation_to_text(problem, result.x, out);
}

std::string run_audit(const AuditArgs& a) {
  if (!a.policy.empty()) check_policy_name(a.policy);  // even when the probe is off
  ShareProblem problem = read_share_problem(a.input);
  AllocationInput given = read_allocation(problem, a.allocation);
  // --policy overrides the policy named in the allocation file.
  std::string policy_name = a.policy.empty() ? given.policy : a.policy;
  std::unique_ptr<SharePolicy> policy;
  if (!policy_name.empty() && !a.no_sp_probe) policy = make_policy(policy_name);
  AuditOptions options;
  options.strategy_proofness_probe = policy != nullptr;
  AuditReport report = audit_allocation(problem, given.x, policy.get(), options);
  if (a.json) return audit_to_json(report);
  return allocation_to_text(problem, given.x, {"", -1, &report});
}

// Every round policy with its description and, under it, its keys: key=default,
// what the key accepts and its help.
std::string run_policies(const std::vector<RoundPolicyInfo>& all, bool python) {
  std::size_t width = 0, key_width = 0;
  for (const auto& p : all) {
    width = std::max(width, p.name.size());
    for (const auto& k : p.keys)
      key_width = std::max(key_width, k.key.size() + 1 + k.default_value.size());
  }
  std::string out =
      python ? "Name a Python policy py:FILE:CLASS[:key=value...] (docs/python.md); a list value\n"
               "is '/'-separated.\n"
             : "Name a policy NAME or NAME:key=value[:key=value...] (simulate --policy, compare\n"
               "--policies, serve's \"policy\"), e.g. allox:alpha=0.2; a list value is '/'-separated.\n";
  bool share = false, first = true;
  for (const auto& p : all) {
    if (first || p.share != share)
      out += p.share ? "share policies (tenant or job level):\n"
                     : "time-sharing policies (job level):\n";
    first = false;
    share = p.share;
    out += fmt::format("  {:<{}}  {}\n", p.name, width, p.description);
    for (const auto& k : p.keys)
      out += fmt::format("      {:<{}}  {} ({})\n", k.key + "=" + k.default_value, key_width,
                         k.help, describe_accepted(k));
  }
  return out;
}

// The same for machines: one object per policy, in the listing's order, with
// its keys as the table shows them.
std::string run_policies_json(const std::vector<RoundPolicyInfo>& all) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& p : all) {
    nlohmann::ordered_json keys = nlohmann::ordered_json::array();
    for (const auto& k : p.keys)
      keys.push_back({{"key", k.key},
                      {"default", k.default_value},
                      {"help", k.help},
                      {"accepts", describe_accepted(k)}});
    out.push_back({{"name", p.name},
                   {"kind", p.share ? "share" : "time-sharing"},
                   {"description", p.description},
                   {"keys", std::move(keys)}});
  }
  return out.dump(2) + "\n";
}

// CLI11 messages may span lines; the contract is one line.
std::string flatten(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

int run(int argc, char** argv) {
  CLI::App app{
      "fairgpu: a fair scheduler for shared heterogeneous GPU clusters.\n"
      "Simulates policies round by round on traces (simulate, compare, generate),\n"
      "computes a policy's fair share of GPU types per tenant and audits allocations\n"
      "for envy-freeness, sharing incentive, Pareto efficiency, optimal efficiency and\n"
      "strategy-proofness (allocate, audit).",
      "fairgpu"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "fairgpu " + fairgpu_version());
  app.footer(
      "Exit status: 0 ok, 2 bad input or command line or a request the server refused "
      "(one line on stderr), 3 a failure that may pass (server unreachable or 5xx), 1 other "
      "errors.\nRun 'fairgpu <subcommand> --help' for the options of a subcommand.");
  const std::string policy_help = "share policy: " + policy_names();

  AllocateArgs alloc;
  auto* allocate =
      app.add_subcommand("allocate", "compute a policy's share of every GPU type for every tenant");
  auto* alloc_input = allocate->add_option(
      "--input", alloc.input, "problem JSON (default: a built-in 3-type, 2-tenant example)");
  allocate->add_option("--policy", alloc.policy, policy_help + " (default: oef-coop)");
  allocate->add_flag("--json", alloc.json, "print JSON instead of a table");
  allocate->add_flag("--audit", alloc.audit, "also check EF, SI, PE, efficiency and SP");
  allocate->add_flag("--no-sp-probe", alloc.no_sp_probe,
                     "with --audit: skip the strategy-proofness probe (re-runs the policy)");

  AuditArgs aud;
  auto* audit = app.add_subcommand("audit", "check a given allocation for the fairness properties");
  audit->add_option("--input", aud.input, "problem JSON")->required();
  audit
      ->add_option("--allocation", aud.allocation,
                   "allocation JSON: `fairgpu allocate --json` output, or "
                   "{\"allocation\": [[...], ...]} (one row per tenant / job type)")
      ->required();
  audit->add_option("--policy", aud.policy,
                    "policy the strategy-proofness probe re-runs (default: the file's "
                    "\"policy\"; without one the probe is skipped); " +
                        policy_help);
  audit->add_flag("--json", aud.json, "print the audit as JSON");
  audit->add_flag("--no-sp-probe", aud.no_sp_probe, "skip the strategy-proofness probe");

  auto* policies = app.add_subcommand(
      "policies", "list the registered policies and each one's keys (NAME:key=value)");
  bool policies_json = false;
  policies->add_flag("--json", policies_json,
                     "print a JSON array instead: name, kind, description and keys (key, "
                     "default, help, accepts) of each policy");
  std::vector<std::string> policy_files;
  policies->add_option("--py", policy_files,
                       "list instead the Python policies these files define (py:FILE:CLASS), "
                       "with their docstrings and keys")
      ->type_name("FILE...");
  std::vector<std::pair<CLI::App*, cli::Command>> commands;
  cli::add_sim_commands(app, commands);
  cli::add_sweep_command(app, commands);
#ifdef FAIRGPU_HAVE_LIVE  // off in the simulator-only build (-DFAIRGPU_LIVE=OFF)
  cli::add_agent_command(app, commands);
  cli::add_serve_command(app, commands);
  cli::add_client_commands(app, commands);
#endif
  cli::add_shockwave_command(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError&) {
    // Arguments no option took, in the order given (CLI11's own message
    // lists them reversed), named with the command they went to.
    std::string command = "fairgpu", extras;  // "fairgpu compare"
    for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
    for (const std::string& a : app.remaining(true)) extras += (extras.empty() ? "" : " ") + a;
    std::string hint = "run '" + command + " --help'";
    // compare, sweep and shockwave-eval run several policies.
    if ((" " + extras + " ").find(" --policy ") != std::string::npos && command != "fairgpu" &&
        command.find("simulate") == std::string::npos)
      hint = "this command takes --policies a,b,... (--policy is simulate's)";
    const std::string where = command == "fairgpu" ? "" : command.substr(8) + ": ";
    if (t_captured)
      throw UsageError(where + "unexpected arguments: " + flatten(extras) + "; " + hint);
    std::fprintf(stderr, "fairgpu: %sunexpected arguments: %s; %s\n", where.c_str(),
                 flatten(extras).c_str(), hint.c_str());
    return kExitBadInput;
  } catch (const CLI::ParseError& e) {
    if (t_captured) throw UsageError(flatten(e.what()));
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::fprintf(stderr, "fairgpu: %s; run 'fairgpu --help'\n", flatten(e.what()).c_str());
    return kExitBadInput;
  }

  // Only an absent --input means the built-in example; --input "" is a mistake.
  alloc.use_default = alloc_input->count() == 0;
  std::string out;
  if (allocate->parsed())
    out = run_allocate(alloc);
  else if (audit->parsed())
    out = run_audit(aud);
  else if (policies->parsed()) {
    std::vector<RoundPolicyInfo> all;
#ifdef FAIRGPU_HAVE_PYTHON
    for (const std::string& file : policy_files)
      for (auto& p : python::python_policies_in(file)) all.push_back(std::move(p));
#else
    if (!policy_files.empty())
      throw InputError("policies", "--py", "this fairgpu was built without Python (FAIRGPU_PYTHON)");
#endif
    // Share policies first, as the built-in listing.
    std::stable_partition(all.begin(), all.end(), [](const auto& p) { return p.share; });
    if (policy_files.empty()) all = round_policy_catalogue();
    out = policies_json ? run_policies_json(all) : run_policies(all, !policy_files.empty());
  }
  for (auto& [sub, command] : commands)
    if (sub->parsed()) out = command();
  if (t_captured) {
    *t_captured = std::move(out);
    return kExitOk;
  }
  if (std::fputs(out.c_str(), stdout) < 0 || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "fairgpu: cannot write the output\n");
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

std::string cli::run_in_process(const std::vector<std::string>& args) {
  std::vector<std::string> copy = args;
  copy.insert(copy.begin(), "fairgpu");
  std::vector<char*> argv;
  for (std::string& a : copy) argv.push_back(a.data());
  std::string out;
  t_captured = &out;
  struct Reset {
    ~Reset() { t_captured = nullptr; }
  } reset;
  try {
    run(static_cast<int>(argv.size()), argv.data());
  } catch (const UsageError& e) {
    throw InputError("fairgpu " + (args.empty() ? std::string() : args.front()), "",
                     e.what());
  }
  return out;
}

int cli::program_main(int argc, char** argv) {
  try {
    return fairgpu::run(argc, argv);
  } catch (const fairgpu::InputError& e) {
    std::fprintf(stderr, "fairgpu: %s\n", e.what());
    return fairgpu::kExitBadInput;
  } catch (const fairgpu::UsageError& e) {
    std::fprintf(stderr, "fairgpu: %s\n", e.what());
    return fairgpu::kExitBadInput;
  } catch (const fairgpu::TransientError& e) {
    std::fprintf(stderr, "fairgpu: %s\n", fairgpu::flatten(e.what()).c_str());
    return fairgpu::kExitTransient;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fairgpu: error: %s\n", fairgpu::flatten(e.what()).c_str());
    return fairgpu::kExitFailure;
  }
}

}  // namespace fairgpu
