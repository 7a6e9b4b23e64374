// Subcommands of the `fairgpu` program, each adding itself to the CLI11 app
// and returning what main() runs when it was chosen. Output is composed in
// full before anything is written, so a failure never leaves partial output.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace fairgpu::cli {

// Runs the chosen subcommand; returns what goes to stdout.
using Command = std::function<std::string()>;

// simulate | compare | generate (src/cli/sim_commands.cc).
void add_sim_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands);
// sweep (src/cli/sweep_command.cc): seeds x policies x scenario variants.
void add_sweep_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands);

// The live manager (DESIGN §7, docs/live-protocol.md): `serve`
// (src/cli/serve_command.cc), `agent` (src/cli/agent_command.cc), and the
// client commands submit | jobs | cancel | cluster | tenants | profiles
// (src/cli/client_commands.cc).
void add_serve_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands);
void add_agent_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands);
void add_client_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands);
// `shockwave-eval` (src/cli/shockwave_command.cc).
void add_shockwave_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands);

}  // namespace fairgpu::cli
