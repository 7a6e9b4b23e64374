// A background process of the live end-to-end tests (server or agent),
// started with fork/exec, its output in a log file.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace fairgpu {

// A background process (server or agent) with its output in a log file.
class Daemon {
 public:
  // `cwd`: the folder it starts in ({}: the test's own).
  Daemon(std::vector<std::string> argv, std::filesystem::path log, std::filesystem::path cwd = {})
      : argv_(std::move(argv)), log_(std::move(log)), cwd_(std::move(cwd)) {
    start();
  }
  ~Daemon() { stop(SIGKILL); }
  void start() {
    pid_ = ::fork();
    if (pid_ == 0) {
      if (!cwd_.empty() && ::chdir(cwd_.c_str()) != 0) ::_exit(126);
      int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> args;
      for (auto& a : argv_) args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  // Sends `sig` and waits; the exit status (-1 when killed by a signal).
  int stop(int sig) {
    if (pid_ <= 0) return status_;
    ::kill(pid_, sig);
    int raw = 0;
    ::waitpid(pid_, &raw, 0);
    pid_ = -1;
    status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return status_;
  }
  void signal(int sig) const { ::kill(pid_, sig); }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }
  const std::filesystem::path& log() const { return log_; }
  // What it has written so far.
  std::string text() const {
    std::ifstream in(log_);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  std::vector<std::string> argv_;
  std::filesystem::path log_;
  std::filesystem::path cwd_;
  pid_t pid_ = -1;
  int status_ = -1;
};

}  // namespace fairgpu
