// Subcommands of the `fairgpu` program, each adding itself to the CLI11 app
// and returning what main() runs when it was chosen. Output is composed in
// full before anything is written, so a failure never leaves partial output.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fairgpu/html_report.h"
#include "fairgpu/scenario.h"

namespace fairgpu::cli {

// Runs the chosen subcommand; returns what goes to stdout.
using Command = std::function<std::string()>;

// simulate | compare | generate (src/cli/sim_commands.cc).
void add_sim_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands);
// sweep (src/cli/sweep_command.cc): seeds x policies x scenario variants.
void add_sweep_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands);

// Helpers the simulation commands share (src/cli/sim_commands.cc).
//
// Writes whole files into `dir` (created); throws std::runtime_error naming
// the file that cannot be written.
void write_files(const std::string& dir,
                 const std::vector<std::pair<std::string, std::string>>& files);
// --figure-axes and --no-pdf (the figures of report.html and figures/).
void add_report_options(CLI::App* c, ReportOptions& options);
// write_report (report.html, figures/), its notes on stderr.
void write_report_noting(const std::string& dir, const ReportOptions& options);
// A comma-separated list of policy specifiers (NAME or NAME:key=value...),
// empty items skipped. Each run writes <out>/<folder>/, so throws InputError
// on field `policies` for an empty list, a repeated specifier, or two that
// write to the same folder.
std::vector<std::string> split_policies(const std::string& list);

// The live manager (docs/design.md §7, docs/live-protocol.md): `serve`
// (src/cli/serve_command.cc), `agent` (src/cli/agent_command.cc), and the
// client commands submit | jobs | cancel | cluster | tenants | profiles
// (src/cli/client_commands.cc).
void add_serve_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands);
void add_agent_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands);
void add_client_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands);
// `shockwave-eval`'s runs: compare's (the same files, progress lines and
// report) with Shockwave's table printed instead of compare's.
struct ShockwaveCompareArgs {
  ScenarioOptions scenario;
  std::string policies;
  std::string out;  // "" = fairgpu-out/shockwave-eval
  bool quiet = false;
  bool plan_times = false;
  ReportOptions report;
};
std::string run_shockwave_compare(const ShockwaveCompareArgs& args);
// `shockwave-eval` (src/cli/shockwave_command.cc).
void add_shockwave_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands);

}  // namespace fairgpu::cli
