#include "live/slurm/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace fairgpu::live::slurm {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

CommandResult run_command(const CommandSpec& spec) {
  if (spec.argv.empty()) throw std::runtime_error("run_command: empty argv");
  // Everything the child needs is built before fork.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& kv : spec.env) overridden = overridden || kv.first == name;
    if (!overridden) env_strings.push_back(entry);
  }
  for (const auto& kv : spec.env) env_strings.push_back(kv.first + "=" + kv.second);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  // stdin is a socket so that writing to a child that stopped reading gives
  // EPIPE (MSG_NOSIGNAL), not a SIGPIPE to this process.
  int in_pair[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pair) != 0 ||
      ::pipe2(out_pipe, O_CLOEXEC) != 0 ||
      (!spec.merge_stderr && ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
    const std::string why = std::strerror(errno);
    for (int* fd :
         {&in_pair[0], &in_pair[1], &out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1]})
      close_fd(*fd);
    throw std::runtime_error("run_command: cannot make pipes: " + why);
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const std::string why = std::strerror(errno);
    for (int* fd :
         {&in_pair[0], &in_pair[1], &out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1]})
      close_fd(*fd);
    throw std::runtime_error("run_command: fork: " + why);
  }
  if (pid == 0) {
    // The command dies with this process: an orphaned `scancel --signal`
    // keeps retrying a job that is not running and signals its NEXT run (a
    // fairgpu killed right after a revoke then saw that run end as finished),
    // and an orphaned scontrol batch would apply a dead instance's writes
    // once slurmctld answers.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::setpgid(0, 0);
    ::dup2(in_pair[1], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(spec.merge_stderr ? out_pipe[1] : err_pipe[1], 2);
    ::execvpe(argv[0], argv.data(), envp.data());
    const char* msg = "cannot execute ";
    (void)!::write(2, msg, std::strlen(msg));
    (void)!::write(2, argv[0], std::strlen(argv[0]));
    (void)!::write(2, ": ", 2);
    const char* why = std::strerror(errno);
    (void)!::write(2, why, std::strlen(why));
    (void)!::write(2, "\n", 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  close_fd(in_pair[1]);
  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  int in_fd = in_pair[0], out_fd = out_pipe[0], err_fd = err_pipe[0];
  set_nonblocking(in_fd);
  set_nonblocking(out_fd);
  if (err_fd >= 0) set_nonblocking(err_fd);
  if (spec.input.empty()) close_fd(in_fd);

  CommandResult r;
  r.started = true;
  std::size_t written = 0;
  bool too_much = false;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(spec.timeout_s));
  char buf[65536];
  while (out_fd >= 0 || err_fd >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd fds[3];
    nfds_t n = 0;
    int in_at = -1, out_at = -1, err_at = -1;
    if (in_fd >= 0) {
      in_at = static_cast<int>(n);
      fds[n++] = {in_fd, POLLOUT, 0};
    }
    if (out_fd >= 0) {
      out_at = static_cast<int>(n);
      fds[n++] = {out_fd, POLLIN, 0};
    }
    if (err_fd >= 0) {
      err_at = static_cast<int>(n);
      fds[n++] = {err_fd, POLLIN, 0};
    }
    const int ready = ::poll(fds, n, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (in_at >= 0 && fds[in_at].revents) {
      const ssize_t w =
          ::send(in_fd, spec.input.data() + written, spec.input.size() - written, MSG_NOSIGNAL);
      if (w > 0) written += static_cast<std::size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) written = spec.input.size();
      if (written == spec.input.size()) close_fd(in_fd);
    }
    for (int at : {out_at, err_at}) {
      if (at < 0 || !fds[at].revents) continue;
      int& fd = at == out_at ? out_fd : err_fd;
      std::string& sink = at == out_at ? r.out : r.err;
      const ssize_t got = ::read(fd, buf, sizeof buf);
      if (got > 0) {
        sink.append(buf, static_cast<std::size_t>(got));
        if (r.out.size() + r.err.size() > spec.max_output) too_much = true;
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        close_fd(fd);
      }
    }
    if (too_much) break;
  }
  close_fd(in_fd);
  close_fd(out_fd);
  close_fd(err_fd);
  if (r.timed_out || too_much) ::kill(-pid, SIGKILL);
  int status = 0;
  // The streams are closed; a child that still runs (it closed them, or it
  // is past its deadline) gets until the deadline, then SIGKILL.
  while (true) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (std::chrono::steady_clock::now() >= deadline && !r.timed_out) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
    }
    ::usleep(2000);
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  const std::string& diagnostics = spec.merge_stderr ? r.out : r.err;
  if (r.exit_code == 127 && diagnostics.rfind("cannot execute ", 0) == 0) r.started = false;
  if (too_much)
    throw std::runtime_error("run_command: " + spec.argv[0] + " printed more than " +
                             std::to_string(spec.max_output) + " bytes");
  return r;
}

}  // namespace fairgpu::live::slurm
