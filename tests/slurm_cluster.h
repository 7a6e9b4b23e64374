// A Slurm test cluster for one test process (scripts/slurm-cluster.sh):
// started once per test suite, stopped in TearDownTestSuite and, should the
// test process die first (a crash, a sanitizer abort, ctest's timeout kill),
// by a reaper process that waits on a pipe this process holds open.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "run_binary.h"
#include "test_files.h"

namespace fairgpu::testing_support {

// The first of `dirs` holding an executable `name`; "" when none does.
inline std::string find_program(const std::string& name) {
  std::vector<std::string> dirs{"/usr/sbin", "/usr/bin",        "/sbin",
                                "/bin",      "/usr/local/sbin", "/usr/local/bin"};
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    std::size_t start = 0;
    while (start <= p.size()) {
      std::size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      if (end > start) dirs.push_back(p.substr(start, end - start));
      start = end + 1;
    }
  }
  for (const auto& d : dirs) {
    const std::string f = d + "/" + name;
    if (::access(f.c_str(), X_OK) == 0) return f;
  }
  return "";
}

class SlurmTestCluster {
 public:
  // Why the cluster cannot be used: "" when it runs.
  const std::string& skip_reason() const { return skip_reason_; }
  const std::string& error() const { return error_; }
  const std::string& dir() const { return dir_; }
  std::string conf() const { return dir_ + "/slurm.conf"; }
  // "char" (mknod devices: CUDA_VISIBLE_DEVICES is set) or "file".
  std::string gpu_devices() const {
    std::string s = slurp(dir_ + "/gpu-devices");
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }

  void start(const std::string& nodes) {
    for (const char* p :
         {"slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel", "sinfo"}) {
      if (find_program(p).empty()) {
        skip_reason_ = std::string("Slurm is not installed (no ") + p +
                       "; scripts/setup.sh installs slurmctld, slurmd and slurm-client)";
        return;
      }
    }
    char tmpl[] = "/tmp/fairgpu-slurm-XXXXXX";
    if (!::mkdtemp(tmpl)) {
      error_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    start_reaper();
    const std::string script = source_path("scripts/slurm-cluster.sh");
    const std::string cmd = quote(script) + " start " + quote(dir_) + " " + quote(nodes) + " >" +
                            quote(dir_ + "/start.log") + " 2>&1";
    if (std::system(cmd.c_str()) != 0)
      error_ = "slurm-cluster.sh start failed: " + slurp(dir_ + "/start.log");
  }

  // Stops the daemons and removes the directory; true when nothing is left.
  bool stop() {
    if (dir_.empty()) return true;
    const std::string cmd = quote(source_path("scripts/slurm-cluster.sh")) + " stop " +
                            quote(dir_) + " >" + quote(dir_ + "/stop.log") + " 2>&1";
    const bool ok = std::system(cmd.c_str()) == 0;
    if (!ok) stop_log_ = slurp(dir_ + "/stop.log");
    if (reaper_fd_ >= 0) ::close(reaper_fd_);  // the reaper stops again (a no-op) and removes dir
    reaper_fd_ = -1;
    return ok;
  }
  const std::string& stop_log() const { return stop_log_; }

 private:
  void start_reaper() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setsid();
      ::dup2(fds[0], 0);
      const std::string script = source_path("scripts/slurm-cluster.sh");
      const std::string sh = "cat >/dev/null; " + quote(script) + " stop " + quote(dir_) +
                             " >/dev/null 2>&1; rm -rf " + quote(dir_);
      ::execl("/bin/sh", "sh", "-c", sh.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[0]);
    reaper_fd_ = fds[1];
  }

  std::string skip_reason_, error_, dir_, stop_log_;
  int reaper_fd_ = -1;
};

}  // namespace fairgpu::testing_support
