// The command line as a library (main.cc): the program's main() and the
// Python module's compare/sweep/allocate/audit (src/python/run.cc), which run
// the very commands the program does, so they read, check and write alike.
#pragma once

#include <string>
#include <vector>

namespace fairgpu::cli {

// `fairgpu ARGS...`: exit status, errors printed on stderr as one line.
int program_main(int argc, char** argv);

// Runs one command in this process and returns what it prints on stdout
// (its files written as the program writes them). Errors are thrown: a bad
// command line or input is an InputError, anything else as it comes. Not
// for serve or agent.
std::string run_in_process(const std::vector<std::string>& args);

// The program `sweep` starts for each of its runs (default: this process's
// executable, which in Python is python3).
void set_program(const std::string& path);

}  // namespace fairgpu::cli
