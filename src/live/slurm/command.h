// Running one of Slurm's command-line tools as a child process: stdin text
// in, stdout and stderr out, a deadline after which the child's process
// group is SIGKILLed (a hung slurmctld must not hang fairgpu).
//
// Not live/process.h's Process: that supervises a job (log file, pid file,
// signal sequence, no stdin); this is a short request/response call.
// Safe to call from several threads (nothing but async-signal-safe calls
// between fork and exec).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fairgpu::live::slurm {

struct CommandResult {
  int exit_code = -1;      // 128 + signal when killed by one
  bool timed_out = false;  // killed at the deadline
  bool started = false;    // false: exec failed (exit_code 127, err says why)
  std::string out;
  std::string err;  // empty when merge_stderr
};

struct CommandSpec {
  std::vector<std::string> argv;  // argv[0] is a path or a name searched in PATH
  std::string input;              // written to stdin, then stdin is closed
  // Set on top of this process's environment (e.g. SLURM_CONF).
  std::vector<std::pair<std::string, std::string>> env;
  double timeout_s = 30;
  bool merge_stderr = false;  // stderr into `out`, in the order written
  // Output past this many bytes is an error (the child is killed).
  std::size_t max_output = 64u << 20;
};

// Runs the command to its end or its deadline. Throws std::runtime_error
// only when no child could be made (fork/pipe failure) or the output grows
// past max_output.
CommandResult run_command(const CommandSpec& spec);

}  // namespace fairgpu::live::slurm
