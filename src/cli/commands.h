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

}  // namespace fairgpu::cli
