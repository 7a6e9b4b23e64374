// run_command (src/live/slurm/command.h), the child processes behind the
// Slurm client: a command dies with the process that ran it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "live/slurm/command.h"
#include "run_binary.h"

namespace fairgpu::live::slurm {
namespace {

namespace fs = std::filesystem;

// Gone, or a zombie nobody reaped yet.
bool gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

TEST(SlurmCommand, ACommandDiesWithTheProcessThatRanIt) {
  // A fairgpu killed with -9 left its `scancel --signal` running; it kept
  // retrying a job that was not running and signalled the job's next run.
  const fs::path pid_file =
      fs::temp_directory_path() / ("fairgpu-command-" + std::to_string(::getpid()));
  fs::remove(pid_file);
  const pid_t runner = ::fork();
  if (runner == 0) {
    CommandSpec spec;
    spec.argv = {"/bin/sh", "-c",
                 "echo $$ >'" + pid_file.string() + ".tmp'; mv '" + pid_file.string() + ".tmp' '" +
                     pid_file.string() + "'; exec sleep 60"};
    spec.timeout_s = 120;
    run_command(spec);
    ::_exit(0);
  }
  ASSERT_GT(runner, 0);
  for (int i = 0; i < 500 && !fs::exists(pid_file); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(pid_file));
  const pid_t command = std::stoi(testing_support::slurp(pid_file));
  fs::remove(pid_file);
  EXPECT_FALSE(gone(command));
  ::kill(runner, SIGKILL);
  ::waitpid(runner, nullptr, 0);
  bool dead = false;
  for (int i = 0; i < 250 && !(dead = gone(command)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(dead) << "the command outlived the process that ran it";
  if (!dead) ::kill(command, SIGKILL);
}

}  // namespace
}  // namespace fairgpu::live::slurm
